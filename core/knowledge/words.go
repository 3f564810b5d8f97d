package knowledge

// SituationWords (space-separated) are verbs, adjectives and adverbs of
// support questions that tell the asker's situation, the time or the
// manner of what they ask ("keep", "yesterday", "several", "else", "right
// away", "how fast") rather than name its subject. Retrieval ranks with
// them as with any word, but its answerability decision weighs them as
// generic and never names one missing; the embedded model leaves them out
// of a question's focus. One list for both, so that the part that decides
// and the part that answers agree on what a question is about.
const SituationWords = `
keep keeps kept lose loses lost stop stops start starts started try tried trying wait waiting
move moved talk talking fail fails failed failing happen happens happened seem seems stay stays
put leave left bring brought call called turn turned switch switched run runs running ran set
setting going went suppose supposed done doing did said says tells told ask asked asking think
thought feel mean means meant combine combined join joined hold helps letting show shows showed
right away different difference differences versus vs existing exist exists fully full whole
entire same other another current currently old new first last next main own real sure correct
wrong short big bigger small smaller high higher low lower early late later soon quick quickly
easy easily hard simple several certain specific general normal regular usual usually instead
again ever anyway somehow automatically manually properly already still extra middle single
every each enough less least lot lots kind type sort day days week weeks month months year years
time times today tomorrow yesterday hand minute minutes hour hours second seconds everyone
people person corporate accept accepted allow allowed offer offered provide arrive arrived
arrives completely totally entirely anywhere everything nothing else since thru though help let
more most much many way ways thing things someone anyone guy guys fast faster available`
