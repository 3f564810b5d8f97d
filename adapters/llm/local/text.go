package local

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/knowledge"
)

// This file holds the text tools of the extractive answerer: a word scanner
// that lowercases into a caller's buffer (no allocation per word), a light
// English stemmer working in place, the stopword and "generic word" tables,
// and a sentence splitter. The tables are read-only after package
// initialisation, so concurrent calls share them safely.

// nextWord finds the next word of s at or after i. A word is a run of letters
// and digits; an apostrophe between two letters is dropped ("don't" is
// "dont", "customer's" is "customers"). The lowercased word is appended to
// buf[:0]. It returns the word, the byte offsets of the word in s, and false
// when there is no word left.
func nextWord(s string, i int, buf []byte) (word []byte, start, end int, ok bool) {
	// Skip to the first letter or digit.
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if isASCIIWordByte(c) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			break
		}
		i += n
	}
	if i >= len(s) {
		return buf[:0], i, i, false
	}
	start = i
	buf = buf[:0]
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if isASCIIWordByte(c) {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				buf = append(buf, c)
				i++
				continue
			}
			if c == '\'' && i > start && i+1 < len(s) && isLetterAt(s, i+1) && isLetterBefore(s, i) {
				i++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			i += n
			continue
		case r == '’' && i > start && i+n < len(s) && isLetterAt(s, i+n) && isLetterBefore(s, i):
			i += n
			continue
		}
		break
	}
	return buf, start, i, true
}

func isASCIIWordByte(c byte) bool {
	return asciiWord[c]
}

// asciiWord marks the ASCII letters and digits.
var asciiWord = func() (t [256]bool) {
	for c := 0; c < 128; c++ {
		t[c] = ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
	}
	return t
}()

func isLetterAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r)
}

func isLetterBefore(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return unicode.IsLetter(r)
}

// stem reduces an inflected English word to a stem, in place: plurals and
// third persons ("ships", "policies"), -ed and -ing forms ("shipped",
// "returning"), -ment nouns ("payment") and a final silent e ("charge",
// "charging" and "charged" all become "charg"). It is deliberately light:
// stems only need to be consistent with each other, not to be words. Words
// with digits or non-ASCII letters are left alone.
func stem(b []byte) []byte {
	for _, c := range b {
		if c < 'a' || c > 'z' {
			return b
		}
	}
	if len(b) <= 3 {
		return dropFinalE(b)
	}
	// Plurals and third persons.
	switch {
	case hasSuffix(b, "sses"):
		b = b[:len(b)-2]
	case hasSuffix(b, "ies"):
		if len(b) > 4 {
			b = append(b[:len(b)-3], 'y')
		} else {
			b = b[:len(b)-1]
		}
	case hasSuffix(b, "ss"), hasSuffix(b, "us"), hasSuffix(b, "is"):
	case b[len(b)-1] == 's':
		b = b[:len(b)-1]
	}
	// Past forms and gerunds.
	undouble := false
	switch {
	case hasSuffix(b, "eed"):
	case hasSuffix(b, "ied"):
		if len(b) > 4 {
			b = append(b[:len(b)-3], 'y')
		} else {
			b = b[:len(b)-1]
		}
	case hasSuffix(b, "ed") && len(b) >= 4 && hasVowel(b[:len(b)-2]):
		b, undouble = b[:len(b)-2], true
	case hasSuffix(b, "ing") && len(b) >= 5 && hasVowel(b[:len(b)-3]):
		b, undouble = b[:len(b)-3], true
	case hasSuffix(b, "ment") && len(b) >= 7:
		b = b[:len(b)-4]
	}
	if undouble && len(b) >= 3 {
		c := b[len(b)-1]
		switch {
		case c != b[len(b)-2] || isVowel(c) || c == 's' || c == 'z':
		case c != 'l':
			b = b[:len(b)-1] // "shipp(ing)"
		case len(b) >= 6 && b[len(b)-3] == 'e':
			b = b[:len(b)-1] // British "cancell(ed)", "travell(ing)"
		}
	}
	return dropFinalE(b)
}

// dropFinalE drops a final silent e: "make" and "making" meet at "mak",
// "use" and "using" at "us".
func dropFinalE(b []byte) []byte {
	if len(b) >= 3 && b[len(b)-1] == 'e' && b[len(b)-2] != 'e' {
		b = b[:len(b)-1]
	}
	return b
}

func hasSuffix(b []byte, suffix string) bool {
	return len(b) >= len(suffix) && string(b[len(b)-len(suffix):]) == suffix
}

func isVowel(c byte) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'
}

// hasVowel reports whether b has a vowel, counting y after the first letter.
func hasVowel(b []byte) bool {
	for i, c := range b {
		if isVowel(c) || (c == 'y' && i > 0) {
			return true
		}
	}
	return false
}

// stemString stems a word given as a string (used to build the tables).
func stemString(w string) string {
	return string(stem([]byte(w)))
}

// stopwords are function words and small talk: they carry no topic, so a
// question made only of them ("hi", "thanks!") has nothing to look up.
var stopwords = makeSet(stopwordList)

const stopwordList = `
a about above after again against all almost also although am among an and another any anybody
anyone anything anyway anywhere are aren arent around as at be became because become been before
being below between both but by can cannot cant could couldn couldnt did didn didnt do does doesn
doesnt doing don dont done down during each either else enough etc even ever every everybody
everyone everything few for from further had hadn hadnt has hasn hasnt have haven havent having he
hed hell her here hers herself hes hi him himself his how hows however i id ill im into is isn isnt
it its itself ive just lets may maybe me might mine more most must mustn mustnt my myself neither
never no nobody nor not nothing now of off often on once one ones only onto or other others otherwise
ought our ours ourselves out over own per perhaps quite rather really same shall shan shant she
shed shell shes should shouldn shouldnt since so some somebody someone something sometimes somewhat
still such than that thats the their theirs them themselves then there theres these they theyd
theyll theyre theyve this those though through thus to too toward towards under until up upon us
very via was wasn wasnt we wed well were weren werent weve what whats whatever when whens whenever
where wheres whereas wherever whether which while who whos whoever whom whose why whys will with
within without won wont would wouldn wouldnt yet you youd youll your youre yours yourself
yourselves youve
usually normally typically generally currently actually already anymore basically probably
hello hey hiya howdy greetings thank thanks thx ty please pls plz ok okay yes yeah yep nope sure
cheers bye goodbye sorry excuse dear sir madam thru tho
`

// genericWords are content words too common in questions to decide a match
// on their own ("how long does it take"); they count half. Stored stemmed.
var genericWords = makeStemSet(genericList)

const genericList = `
take takes get gets got make need want know work way thing like help able possible tell say go
come give find let see look long much many use new good best question questions info information
back cost costs price prices pricing account accounts problem problems issue issues
`

// situationWords are common verbs, adjectives and adverbs that describe the
// customer's situation or the manner of what they ask ("keep", "lose",
// "right away", "different", "existing") rather than name its subject. They
// count as usual when matching, but are not part of a question's focus: a
// passage that does not repeat them may still answer. Stored stemmed.
var situationWords = makeStemSet(situationList)

// situationList is knowledge.SituationWords, for the lists built from it.
const situationList = knowledge.SituationWords

// fillerSpellings are the words of stopwordList, genericList and
// situationList long enough to be recognised misspelt ("anyting",
// "insted", "somthing"): see misspeltFiller.
var fillerSpellings = wordsOfAtLeast(minTypoLen, stopwordList, genericList, situationList)

func wordsOfAtLeast(n int, lists ...string) []string {
	var out []string
	for _, l := range lists {
		for _, w := range strings.Fields(l) {
			if len(w) >= n && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// timeWords are stems that make a sentence a plausible answer to "how long"
// or "when".
var timeWords = makeStemSet(`
second seconds minute minutes min mins hour hours hr hrs day days daily week weeks weekly month
months monthly year years yearly annual annually business weekday weekdays weekend weekends
monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight morning afternoon
evening night noon midnight am pm immediately instantly instant asap
`)

// moneyWords make a sentence a plausible answer to "how much" or "what does
// it cost", as do currency signs. The words "cost", "fee" or "price" are not
// among them: they are what the question asks about, not an amount.
var moneyWords = makeStemSet(`
free dollar dollars euro euros pound pounds cent cents usd eur gbp chf
`)

// wordSet is a set of short words, bucketed by first letter and length so
// that a lookup compares a few strings and never hashes.
type wordSet struct {
	buckets [27 * maxSetWordLen][]string
}

const maxSetWordLen = 24

func (s *wordSet) has(w []byte) bool {
	n := len(w)
	if n == 0 || n >= maxSetWordLen {
		return false
	}
	for _, x := range s.buckets[shapeRow(w[0])*maxSetWordLen+n] {
		if string(w) == x {
			return true
		}
	}
	return false
}

func (s *wordSet) hasString(w string) bool {
	n := len(w)
	if n == 0 || n >= maxSetWordLen {
		return false
	}
	for _, x := range s.buckets[shapeRow(w[0])*maxSetWordLen+n] {
		if w == x {
			return true
		}
	}
	return false
}

func (s *wordSet) add(w string) {
	n := len(w)
	if n == 0 || n >= maxSetWordLen {
		panic("local: word set entry of unsupported length: " + w)
	}
	if !s.hasString(w) {
		i := shapeRow(w[0])*maxSetWordLen + n
		s.buckets[i] = append(s.buckets[i], w)
	}
}

// shape has, per first letter (a-z, then anything else), a bit per word
// length below 64: a cheap test that most words are not among a few.
type shape [27]uint64

func (s *shape) add(w string) {
	if n := len(w); n > 0 && n < 64 {
		s[shapeRow(w[0])] |= 1 << n
	}
}

func (s *shape) mayHave(w []byte) bool {
	n := len(w)
	return n > 0 && n < 64 && s[shapeRow(w[0])]&(1<<n) != 0
}

func shapeRow(c byte) int {
	if 'a' <= c && c <= 'z' {
		return int(c - 'a')
	}
	return 26
}

func makeSet(words string) *wordSet {
	s := new(wordSet)
	for _, w := range strings.Fields(words) {
		s.add(w)
	}
	return s
}

func makeStemSet(words string) *wordSet {
	fields := strings.Fields(words)
	stems := make([]string, len(fields))
	for i, w := range fields {
		stems[i] = stemString(w)
	}
	return makeSet(strings.Join(stems, " "))
}

// abbreviations end in a period that does not end a sentence. Stored
// lowercase without their last period.
var abbreviations = makeSet(`
e.g i.e etc vs mr mrs ms dr prof st jr sr inc ltd co corp approx appx min max dept est fig no nos
ref tel ext a.m p.m u.s u.k u.s.a mt ft jan feb mar apr jun jul aug sep sept oct nov dec
`)

// span is a sentence found in a text, as byte offsets.
type span struct {
	start, end int
	// heading: a markdown heading or a line ending in ':'; its words give
	// context to what follows instead of being quoted.
	heading bool
	// title: a short line without final punctuation ("Shipping Policy",
	// "Free returns"); it gives context to what follows and may be quoted.
	title bool
	// question: the sentence ends with '?'; it gives context to the
	// sentences after it (a FAQ written as text) and is never quoted.
	question bool
}

// splitSentences appends the sentences of text to dst. Lines break hard
// (paragraphs, list items, headings) unless a line ends mid-sentence and the
// next one continues it in lowercase (hard-wrapped prose). Within a block,
// '.', '!' and '?' followed by a space end a sentence, except after known
// abbreviations ("e.g."), initials, a leading list number ("1."), or when the
// next word starts in lowercase.
func splitSentences(text string, dst []span) []span {
	blockStart := 0
	for blockStart < len(text) {
		// Find the end of the block: a hard line break or the end of text.
		end := blockStart
		for {
			nl := strings.IndexByte(text[end:], '\n')
			if nl < 0 {
				end = len(text)
				break
			}
			nl += end
			if !softBreak(text, blockStart, nl) {
				end = nl
				break
			}
			end = nl + 1
		}
		dst = splitBlock(text, blockStart, end, end >= len(text), dst)
		blockStart = end + 1
	}
	return dst
}

// softBreak reports whether the newline at nl continues a sentence: the line
// so far ends with a lowercase letter or a comma, and the next line starts
// with a lowercase letter, or is indented, starts with a capital and starts
// no list item (a list item's hard-wrapped text: "1. Install the driver,
// which lets you mount\n   WebDAV shares"). Between two lines of a block
// quote the next line must start in lowercase after its ">", and neither
// line may be labelled program output (see labelled).
func softBreak(text string, lineStart, nl int) bool {
	before := strings.TrimRight(text[lineStart:nl], " \t\r")
	if before == "" {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(before)
	if !(unicode.IsLower(last) || last == ',') {
		return false
	}
	after := strings.TrimLeft(text[nl+1:], " \t")
	if after == "" {
		return false
	}
	// before may span several lines (the block so far): the quote marker
	// and a label are looked for on its last.
	if quoted := strings.TrimLeft(before[strings.LastIndexByte(before, '\n')+1:], " \t"); quoted != "" && quoted[0] == '>' && after[0] == '>' {
		// A block quote's wrapped line ("> ... You\n> can ignore this
		// error"), unless the lines are labelled output ("> debug1:
		// connect ...", "> ssh: connect ..."), which GitHub's pages quote
		// the same way.
		after = strings.TrimLeft(after[1:], " \t")
		if labelled(strings.TrimLeft(quoted[1:], " \t")) || labelled(after) {
			return false
		}
		first, _ := utf8.DecodeRuneInString(after)
		return unicode.IsLower(first)
	}
	first, _ := utf8.DecodeRuneInString(after)
	if unicode.IsLower(first) {
		return true
	}
	if !unicode.IsUpper(first) {
		return false // a number, a date, a bracket: a log line, not prose
	}
	indented := text[nl+1] == ' ' || text[nl+1] == '\t'
	lineEnd := len(after)
	if i := strings.IndexByte(after, '\n'); i >= 0 {
		lineEnd = i
	}
	return indented && skipListMarker(after, 0, lineEnd) == 0
}

// labelled reports whether a line opens with a label and a colon within
// its first two words ("debug1: connect", "N: Download is performed"), as
// program output does.
func labelled(line string) bool {
	if i := strings.IndexByte(line, ':'); i > 0 {
		return strings.Count(line[:i], " ") <= 1
	}
	return false
}

// splitBlock appends the sentences of text[start:end] to dst.
func splitBlock(text string, start, end int, last bool, dst []span) []span {
	start, end = trimSpace(text, start, end)
	if start >= end {
		return dst
	}
	listItem := false
	if s := skipListMarker(text, start, end); s != start {
		start, listItem = s, true
	}
	if start >= end {
		return dst
	}
	block := text[start:end]
	if block[0] == '#' {
		s := start
		for s < end && (text[s] == '#' || text[s] == ' ' || text[s] == '\t') {
			s++
		}
		if s < end {
			dst = append(dst, span{start: s, end: end, heading: true})
		}
		return dst
	}
	if strings.IndexByte(block, '\n') < 0 {
		lastRune, _ := utf8.DecodeLastRuneInString(block)
		if lastRune == ':' {
			return append(dst, span{start: start, end: end, heading: true})
		}
		// The heading path the chunker puts first in a chunk ("Billing >
		// Invoices > Add a VAT number") names the section: context, not
		// an answer.
		if !listItem && strings.Contains(block, " > ") && !strings.ContainsRune(".!?", lastRune) &&
			strings.TrimSpace(text[:start]) == "" {
			return append(dst, span{start: start, end: end, heading: true})
		}
		if !listItem && !last && isTitleLine(block) {
			return append(dst, span{start: start, end: end, title: true})
		}
	}
	sentStart := start
	for i := start; i < end; i++ {
		c := text[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		for j < end && (text[j] == '.' || text[j] == '!' || text[j] == '?') {
			j++
		}
		// Closing quotes, brackets and emphasis stay with their sentence.
		for j < end {
			if k := closerLen(text[j:end]); k > 0 {
				j += k
				continue
			}
			break
		}
		if j < end && !isSpaceByte(text[j]) {
			continue // "3.5", "acme.com", "?!x"
		}
		if c == '.' && j-i == 1 && !endsSentence(text, sentStart, i, j, end) {
			continue
		}
		s, e := trimSpace(text, sentStart, j)
		if s < e {
			dst = append(dst, span{start: s, end: e, question: c == '?' || text[j-1] == '?'})
		}
		sentStart = j
		i = j - 1
	}
	if s, e := trimSpace(text, sentStart, end); s < e {
		dst = append(dst, span{start: s, end: e})
	}
	return dst
}

// endsSentence decides whether the period at i (followed by whitespace at j,
// or the block's end) ends the sentence that started at sentStart.
func endsSentence(text string, sentStart, i, j, end int) bool {
	// The word before the period.
	w := i
	for w > sentStart && !isSpaceByte(text[w-1]) {
		w--
	}
	word := strings.TrimLeft(text[w:i], "(\"'[*")
	if word == "" {
		return true
	}
	if len(word) == 1 && unicode.IsLetter(rune(word[0])) {
		return false // an initial: "J. Smith"
	}
	if len(word) <= 6 {
		var low [8]byte
		n := copy(low[:], word)
		for k := range n {
			if 'A' <= low[k] && low[k] <= 'Z' {
				low[k] += 'a' - 'A'
			}
		}
		if abbreviations.has(low[:n]) {
			return false
		}
	}
	if w == sentStart && isDigits(word) {
		return false // a numbered list item: "1. Open settings."
	}
	// A sentence does not start in lowercase: "approx. 5 days" continues.
	k := j
	for k < end && isSpaceByte(text[k]) {
		k++
	}
	if k < end {
		r, _ := utf8.DecodeRuneInString(text[k:end])
		if unicode.IsLower(r) {
			return false
		}
	}
	return true
}

// closerLen returns the byte length of a closing quote, bracket or emphasis
// mark at the start of s, or 0.
func closerLen(s string) int {
	switch s[0] {
	case '"', '\'', ')', ']', '*', '_':
		return 1
	}
	for _, q := range [...]string{"”", "’", "»"} {
		if strings.HasPrefix(s, q) {
			return len(q)
		}
	}
	return 0
}

// isTitleLine reports whether a one-line block reads as a title: at most six
// words, no sentence punctuation.
func isTitleLine(block string) bool {
	if strings.ContainsAny(block, ".!?;,|") {
		return false
	}
	words, inWord := 0, false
	for i := 0; i < len(block); i++ {
		space := isSpaceByte(block[i])
		if !space && !inWord {
			if words++; words > 6 {
				return false
			}
		}
		inWord = !space
	}
	return true
}

// skipListMarker moves start past a list or quote marker ("- ", "* ", "1. ",
// "2) ", "> ", "• ").
func skipListMarker(text string, start, end int) int {
	for {
		s := start
		switch {
		case strings.HasPrefix(text[s:end], "• "):
			s += len("• ")
		case text[s] == '-' || text[s] == '*' || text[s] == '+' || text[s] == '>':
			if s+1 < end && (text[s+1] == ' ' || text[s+1] == '\t') {
				s += 2
			} else if text[s] == '>' {
				s++
			}
		case text[s] >= '0' && text[s] <= '9':
			d := s
			for d < end && d-s < 3 && text[d] >= '0' && text[d] <= '9' {
				d++
			}
			if d+1 < end && (text[d] == '.' || text[d] == ')') && (text[d+1] == ' ' || text[d+1] == '\t') {
				s = d + 2
			}
		}
		if s == start {
			return start
		}
		start, _ = trimSpace(text, s, end)
		if start >= end {
			return start
		}
	}
}

func trimSpace(text string, start, end int) (int, int) {
	for start < end && isSpaceByte(text[start]) {
		start++
	}
	for end > start && isSpaceByte(text[end-1]) {
		end--
	}
	return start, end
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isMeasure reports whether a word is a number, alone or with a unit
// ("5gb", "24h", "1080p", "10am"): a quantity of the asker's situation,
// not a subject. A number that is part of a name ("2fa", "1password")
// is none.
func isMeasure(s string) bool {
	i := 0
	for i < len(s) && ('0' <= s[i] && s[i] <= '9' || (i > 0 && (s[i] == '.' || s[i] == ','))) {
		i++
	}
	return i > 0 && (i == len(s) || measureUnits.hasString(s[i:]))
}

// measureUnits are the units a number is written with in one word.
var measureUnits = makeSet(`b kb mb gb tb pb kib mib gib tib k m g h hr hrs min mins s sec secs ms d
w mo y yr yrs x p px am pm st nd rd th gbp usd eur`)

// cleanSentence turns a sentence span into answer text: whitespace runs
// become one space and a sentence without final punctuation gets a period,
// so quoted sentences read as prose when joined.
func cleanSentence(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 1)
	space := false
	first := true
	for line := range strings.Lines(s) {
		if !first {
			// A block quote's wrapped line (see softBreak): its ">" is no
			// word of the sentence.
			line = strings.TrimPrefix(strings.TrimLeft(line, " \t"), ">")
		}
		first = false
		for _, f := range strings.Fields(line) {
			if space {
				b.WriteByte(' ')
			}
			b.WriteString(f)
			space = true
		}
	}
	out := b.String()
	if r, _ := utf8.DecodeLastRuneInString(out); unicode.IsLetter(r) || unicode.IsDigit(r) {
		out += "."
	}
	return out
}

// truncateWords cuts s to at most max bytes at a word boundary and marks the
// cut with an ellipsis.
func truncateWords(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	if cut <= 0 {
		return ""
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexAny(s[:cut], " \t\n"); sp > 0 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " \t\n,;:") + ellipsis
}

// normalizeForCompare lowercases s and collapses whitespace, for containment
// checks against the system prompt.
func normalizeForCompare(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	pending := false
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		i += n
		if unicode.IsSpace(r) {
			pending = b.Len() > 0
			continue
		}
		if pending {
			b.WriteByte(' ')
			pending = false
		}
		if 'A' <= r && r <= 'Z' {
			b.WriteByte(byte(r) + 'a' - 'A')
		} else if r < utf8.RuneSelf {
			b.WriteByte(byte(r))
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// injectionMarkers are phrases of prompt-injection attempts. A sentence with
// one is never quoted: knowledge is data, and an answer that repeats
// "ignore previous instructions" helps no customer.
var injectionMarkers = [...]string{
	"ignore previous", "ignore all previous", "ignore the previous", "ignore the above",
	"ignore all instructions", "ignore your instructions", "previous instructions",
	"disregard previous", "disregard all previous", "disregard the above", "system prompt",
}

func looksLikeInjection(lower string) bool {
	for _, m := range injectionMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}
