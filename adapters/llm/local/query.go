package local

import (
	"math/bits"
	"strings"

	"github.com/conciergehq/concierge/core/knowledge"
)

// query is the user's question, reduced to stemmed content terms. Terms
// [0, originals) are the question's own; the rest are synonyms of them
// (alias gives the term each one stands for), which count synonymWeight of
// the term they replace.
type query struct {
	terms     []string
	index     map[string]int
	shape     shape // of the keys of index
	originals int
	alias     [maxTerms]int8
	generic   uint64
	// pairs are question bigrams: consecutive content terms, stopwords
	// skipped; a sentence matches one in either order.
	pairs [][2]int
	// base are the own terms' weights before IDF (generic words and words
	// aside from the questions count half); baseTotal is their sum.
	base      []float64
	baseTotal float64
	// asked marks the own terms found in the message's questions (all of
	// them when it asks none).
	asked uint64
	// raw is the first spelling of each own term as the user wrote it
	// (lowercased), for matching typos.
	raw []string
	// typo marks alias terms that are a knowledge word within one edit of
	// an own term: they count as that term, not as a synonym.
	typo uint64
	// focus marks the own terms that carry the subject of what is asked:
	// asked, not generic, not a number, time, amount or situation word
	// (situationWords). key is the part of focus that must
	// be found in the knowledge for the model to answer at all (see
	// keyTerms).
	focus, key uint64
	// What kind of answer the question asks for: a time or duration
	// ("how long", "when", "hours"), a price ("how much", "cost") or a
	// count ("how many").
	wantTime, wantMoney, wantNumber bool
	// asksPrice: the question asks how much something costs ("how much"
	// and "cost", "price", "fee"...). Only a sentence with an amount (a
	// figure, a currency, "free") can answer it.
	asksPrice bool
	// wantSteps: the question asks how to do something ("how do I return
	// an item?", "how to reset"), which an instruction answers ("Start a
	// return from the Orders page") better than a statement of the rules
	// ("You can return any unused item within 30 days").
	wantSteps bool
	// action marks the term right after "how do I" or "how to" (the
	// "return" of "how do I return an item?"): the thing to do, which an
	// instruction names though it may not repeat the object.
	action uint64
}

// asideWeight is what a term counts for when the message asks questions
// and the term appears only outside them.
const asideWeight = 0.5

// synonymWeight is what a synonym counts for, relative to the question's own
// word ("delivery" found for "shipping").
const synonymWeight = 0.5

// synonymGroups are knowledge.SupportSynonyms as stems: words a customer
// and a help page commonly use for the same thing.
var synonymGroups, synonymIndex = makeSynonyms(knowledge.SupportSynonyms)

func makeSynonyms(groups []string) ([][]string, map[string]int) {
	out := make([][]string, 0, len(groups))
	index := make(map[string]int)
	for _, g := range groups {
		var stems []string
		for _, w := range strings.Fields(g) {
			s := stemString(w)
			if _, dup := index[s]; dup {
				continue
			}
			index[s] = len(out)
			stems = append(stems, s)
		}
		out = append(out, stems)
	}
	return out, index
}

// priceNouns are the money cues that, in a question opening with "what",
// ask for an amount ("What's the price of ...?"); "What happens if I'm
// charged twice?" asks for none.
var priceNouns = makeStemSet(`price prices pricing cost costs fee fees rate rates`)

// unitReach is how many words after a number its unit may come ("3 to 5
// business days").
const unitReach = 3

// sizeUnits make a number a size, not a price.
var sizeUnits = makeSet(`b kb mb gb tb kib mib gib tib byte bytes kilobytes megabytes gigabytes terabytes`)

// howMuchVerbs follow "how much" in a question that asks what something
// costs ("How much is express delivery?").
var howMuchVerbs = makeSet(`is are was were would will`)

// howDoVerbs and howDoSubjects make "how do I", "how can we", "how should
// you": a question for instructions. "How does it work?" asks for an
// explanation instead.
var (
	howDoVerbs    = makeSet(`do can could should would`)
	howDoSubjects = makeSet(`i we you`)
)

// switchVerbs turn something on or off. After one, "on" and "off", which
// are stopwords elsewhere, carry the action: "How do I turn off 2FA?" asks
// to disable it, and a page that only says how to turn it on does not
// answer that. switched reads them as "enable" and "disable", in the
// question and in the knowledge alike (SupportSynonyms links "activate"
// and "deactivate"). In the question "on", two letters, stays out of the
// focus like any word that short, so "turn on" finds a page that says
// "set up" too, while "turn off" must find its action: help pages say how
// to enable things, and disabling is what they leave out (measured so on
// the tuning halves).
var switchVerbs = makeSet(`turn turned turning turns switch switched switching toggle`)

// switched returns the word w stands for: "enable" for "on" and
// "disable" for "off" right after a switch verb (afterSwitch), else w.
func switched(w []byte, afterSwitch bool) []byte {
	switch {
	case !afterSwitch:
		return w
	case string(w) == "on":
		return []byte("enable") // a copy each time: callers may stem in place
	case string(w) == "off":
		return []byte("disable")
	}
	return w
}

// instructionVerbs open an instruction: a help page's steps are written
// in the imperative ("Click Save", "Go to Settings", "Start a return from
// the Orders page"). A sentence that opens with one (or whose clause after
// a comma does: "To leave, select Leave") is what a how-to question asks
// for. They are common verbs of using software and services; the list is
// kept to verbs that seldom open a statement ("Sign-in" is a noun only
// with its hyphen, which splits the word there).
var instructionVerbs = makeSet(`click select choose pick tap press open close go navigate visit enter type fill
start sign log follow use run install uninstall download upload add remove delete set turn enable disable check
uncheck tick contact email call print submit copy paste drag scroll find search create change update edit save
restart reset send request write return cancel confirm verify connect disconnect switch configure launch hover
expand collapse make move rename share invite allow block review scan attach sort filter`)

// countWords answer "how many" without a figure ("up to five keys",
// "a single account", "unlimited private repositories").
var countWords = makeSet(`one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty
fifty hundred thousand million dozen unlimited single multiple several`)

// stepAdverbs may come before an instruction's verb.
var stepAdverbs = makeSet(`first then next now finally simply just also please`)

// amountNouns name amounts that are no money: "How much is the upload
// limit?" asks for a number, not a price.
var amountNouns = makeStemSet(`limit limits quota storage space memory ram disk cpu data bandwidth traffic battery usage left size`)

// moneyCues are question stems that ask for a price.
var moneyCues = makeStemSet(`cost costs price prices pricing fee fees charge charges rate rates expensive cheap`)

// parseQuery extracts the content terms of a question. When the message
// mixes questions with other sentences ("I ordered last week. I live in
// Canada. How long does shipping take?"), terms found only outside its
// questions count asideWeight: they are context, not what is asked.
func parseQuery(text string, buf []byte, related func(string) []string) (query, []byte) {
	q := query{index: make(map[string]int, 16)}
	spans := splitSentences(text, make([]span, 0, 4))
	asking := false
	for _, sp := range spans {
		asking = asking || sp.question
	}
	var inQuestion, plain, categories uint64
	howMuch, priceCue, whatPrice := false, false, false
	// howMuchIs: "how much is/are ...?", which asks a price unless the
	// question names another amount (amountNouns).
	howMuchIs, otherAmount := false, false
	// actionNext: the next content word is the action of "how do I".
	actionNext := false
	var clauses clauseTracker
	for _, sp := range spans {
		isQuestion := !asking || sp.question
		sentence := text[sp.start:sp.end]
		prevRaw, prevPrevRaw := "", ""
		prev := -1
		// asksWhat: the sentence opens with "what" ("What's the price
		// of ...?", "What are the fees?").
		asksWhat := false
		clauses.startSentence()
		for i := 0; ; {
			w, start, end, ok := nextWord(sentence, i, buf)
			if !ok {
				break
			}
			if i == 0 || strings.ContainsAny(sentence[i:start], ",;:") {
				clauses.startClause()
			}
			buf, i = w, end
			raw := string(w)
			clauses.word(raw)
			if prevRaw == "" {
				asksWhat = raw == "what" || raw == "whats"
			}
			if isQuestion {
				switch {
				case raw == "when" || (prevRaw == "what" && raw == "time"):
					q.wantTime = true
				case prevRaw == "how" && (raw == "long" || raw == "soon" || raw == "quickly" || raw == "fast"):
					q.wantTime = true
				case prevRaw == "how" && raw == "much":
					q.wantMoney, howMuch = true, true
				case prevRaw == "how" && raw == "muchs": // "how much's"
					q.wantMoney, howMuch, howMuchIs = true, true, true
				case prevPrevRaw == "how" && prevRaw == "much" && howMuchVerbs.hasString(raw):
					howMuchIs = true
				case prevRaw == "how" && raw == "many":
					q.wantNumber = true
				case prevRaw == "how" && raw == "to",
					prevPrevRaw == "how" && howDoVerbs.hasString(prevRaw) && howDoSubjects.hasString(raw):
					q.wantSteps, actionNext = true, true
				}
			}
			after := prevRaw
			prevPrevRaw, prevRaw = prevRaw, raw
			w = switched(w, switchVerbs.hasString(after))
			if stopwords.has(w) || (len(w) == 1 && !isDigits(raw)) {
				continue
			}
			st := stem(w)
			if isQuestion && timeWords.has(st) {
				q.wantTime = true
			}
			otherAmount = otherAmount || (isQuestion && amountNouns.has(st))
			if isQuestion && moneyCues.has(st) {
				q.wantMoney, priceCue = true, true
				whatPrice = whatPrice || (asksWhat && priceNouns.has(st))
			}
			s := string(st)
			takeAction := actionNext
			actionNext = false
			id, seen := q.index[s]
			if !seen {
				if len(q.terms) == maxTerms {
					prev = -1
					continue
				}
				id = q.add(s, -1)
				q.raw = append(q.raw, raw)
				if isMeasure(raw) || len(raw) <= 2 || situationWords.has(st) || timeWords.has(st) || moneyWords.has(st) {
					// Not the subject: a number or a size ("5gb"), a two-letter word, a time
					// ("monthly"), an amount ("free") or the situation ("keep", "right away").
					plain |= 1 << id
				}
			}
			clauses.term(id)
			if takeAction {
				q.action |= 1 << id
			}
			if after == "which" || after == "what" {
				// "Which countries do you ship to?" is answered by a list of
				// countries that need not say "countries".
				categories |= 1 << id
			}
			if isQuestion {
				inQuestion |= 1 << id
			}
			if prev >= 0 && prev != id && len(q.pairs) < 64 && q.pairIndex(prev, id) < 0 {
				q.pairs = append(q.pairs, [2]int{prev, id})
			}
			prev = id
		}
		clauses.endSentence(sp.question)
	}
	q.originals = len(q.terms)
	q.asksPrice = (howMuch && priceCue) || whatPrice || (howMuchIs && !otherAmount && !q.wantTime)
	if inQuestion == 0 {
		// "What? I ordered a jacket." asks nothing by its words alone.
		inQuestion = ^uint64(0)
	}
	q.asked = inQuestion
	specific := ownMask(q.originals) &^ q.generic &^ plain
	q.focus = inQuestion & specific
	q.key = clauses.keyTerms(specific) &^ categories
	q.base = make([]float64, q.originals)
	for i := range q.base {
		q.base[i] = q.termWeight(i)
		if inQuestion&(1<<i) == 0 {
			q.base[i] *= asideWeight
		}
		q.baseTotal += q.base[i]
	}
	for id := 0; id < q.originals; id++ {
		g, ok := synonymIndex[q.terms[id]]
		if !ok {
			continue
		}
		for _, syn := range synonymGroups[g] {
			if _, seen := q.index[syn]; !seen && len(q.terms) < maxTerms {
				q.add(syn, id)
			}
		}
	}
	if related != nil {
		// Then the wider table's synonyms (WordNet's, from the retriever's
		// table), for the words the small groups do not cover.
		for id := 0; id < q.originals; id++ {
			if _, grouped := synonymIndex[q.terms[id]]; grouped {
				continue
			}
			for _, w := range related(q.raw[id]) {
				syn := stemString(w)
				if _, seen := q.index[syn]; !seen && len(q.terms) < maxTerms && !stopwords.hasString(w) {
					q.add(syn, id)
				}
			}
		}
	}
	return q, buf
}

// add appends term s, a synonym of alias (or -1 for the question's own), and
// returns its id.
func (q *query) add(s string, alias int) int {
	id := len(q.terms)
	q.terms = append(q.terms, s)
	q.index[s] = id
	q.shape.add(s)
	q.alias[id] = int8(alias)
	if alias >= 0 {
		return id
	}
	if genericWords.hasString(s) {
		q.generic |= 1 << id
	}
	return id
}

// lookup finds a stem among the terms.
func (q *query) lookup(s []byte) (int, bool) {
	if !q.shape.mayHave(s) {
		return 0, false
	}
	id, ok := q.index[string(s)]
	return id, ok
}

// canon maps a term id to the question's own term it stands for.
func (q *query) canon(id int) int {
	if id < q.originals {
		return id
	}
	return int(q.alias[id])
}

// resolve turns a mask of matched term ids into a mask of the question's own
// terms, and the subset of those found only through a synonym.
func (q *query) resolve(raw uint64) (mask, syn uint64) {
	own := uint64(1)<<q.originals - 1
	if q.originals == maxTerms {
		own = ^uint64(0)
	}
	mask = raw & own
	for m := raw &^ own; m != 0; m &= m - 1 {
		id := bits.TrailingZeros64(m)
		if q.typo&(1<<id) != 0 {
			mask |= 1 << q.canon(id)
		} else {
			syn |= 1 << q.canon(id)
		}
	}
	syn &^= mask
	return mask | syn, syn
}

// credit is the weight of a resolved mask: synonyms count synonymWeight.
func credit(mask, syn uint64, w []float64) float64 {
	return sumWeights(mask, w) - (1-synonymWeight)*sumWeights(syn, w)
}

func sumWeights(mask uint64, w []float64) float64 {
	sum := 0.0
	for ; mask != 0; mask &= mask - 1 {
		sum += w[bits.TrailingZeros64(mask)]
	}
	return sum
}

// termWeight is a term's weight before IDF: generic words count half.
func (q *query) termWeight(i int) float64 {
	if q.generic&(1<<i) != 0 {
		return genericWeight
	}
	return 1
}

// pairIndex returns the index of the bigram {a, b} in either order, or -1.
func (q *query) pairIndex(a, b int) int {
	for i, p := range q.pairs {
		if (p[0] == a && p[1] == b) || (p[0] == b && p[1] == a) {
			return i
		}
	}
	return -1
}

// sentenceFacts are what one scan of a sentence learns.
type sentenceFacts struct {
	mask  uint64 // the question's own terms present, directly or by synonym
	syn   uint64 // the part of mask present only by synonym
	pairs uint64 // question bigrams present
	words int
	// typed: the sentence has what the question asks for (a time, a price,
	// a number).
	typed bool
}

// scan matches the words of text against the question without allocating.
func (q *query) scan(text string, buf []byte) (sentenceFacts, []byte) {
	var f sentenceFacts
	var raw uint64
	prev := -1
	// For a price, a number counts unless a time or a size follows it
	// within unitReach words: "3 to 5 business days" is no price.
	priceOnly := q.asksPrice && !q.wantNumber
	number := -1 // the position of such a number, not yet ruled out
	opening := 0 // for steps: the position of the word that opens the clause
	afterSwitch := false
	// Most sentences hold no web address: look for one word by word only
	// in those that do.
	addresses := strings.Contains(text, "](") || strings.Contains(text, "://")
	for i := 0; ; {
		w, start, end, ok := nextWord(text, i, buf)
		if !ok {
			break
		}
		if addresses {
			if skip := addressEnd(text, i, start, end); skip > 0 {
				buf, i = w, skip
				continue
			}
		}
		if q.wantSteps && !f.typed {
			if f.words == 0 || strings.ContainsAny(text[i:start], ",;:") {
				opening = f.words + 1 // this word's position, counted from 1
			}
			if opening == f.words+1 {
				switch {
				case instructionVerbs.has(w):
					f.typed = true
				case stepAdverbs.has(w):
					opening++ // "first remove the key", "then click Save"
				}
			}
		}
		// buf keeps the word's own bytes: the next word is read into it.
		buf, i = w, end
		w, afterSwitch = switched(w, afterSwitch), switchVerbs.has(w)
		f.words++
		if number >= 0 && f.words-number > unitReach {
			f.typed, number = true, -1
		}
		if w[0] >= '0' && w[0] <= '9' {
			switch {
			case priceOnly:
				if number < 0 && !f.typed {
					number = f.words
				}
			case q.wantNumber || q.asksPrice:
				f.typed = true
			}
		}
		if stopwords.has(w) {
			continue
		}
		s := stem(w)
		if number >= 0 && (timeWords.has(s) || sizeUnits.has(w)) {
			number = -1
		}
		// In a price question a time word is the price's unit ("the
		// per-minute price"): it takes an amount, not a time, to answer.
		if q.wantTime && !q.asksPrice && !f.typed && timeWords.has(s) {
			f.typed = true
		}
		if q.wantNumber && !f.typed && countWords.has(w) {
			f.typed = true
		}
		if q.wantMoney && !f.typed && moneyWords.has(s) {
			f.typed = true
		}
		id, ok := q.lookup(s)
		if !ok {
			prev = -1
			continue
		}
		raw |= 1 << id
		id = q.canon(id)
		if prev >= 0 && prev != id {
			if p := q.pairIndex(prev, id); p >= 0 {
				f.pairs |= 1 << p
			}
		}
		prev = id
	}
	if number >= 0 {
		f.typed = true
	}
	if q.wantMoney && !f.typed && strings.ContainsAny(text, "$€£¥") {
		f.typed = true
	}
	f.mask, f.syn = q.resolve(raw)
	return f, buf
}

// questionF1 is the weighted F1 overlap between the user's question and
// another question (generic words count half, synonyms half again). It is
// 0 when the overlap has no specific (non-generic) word.
func (q *query) questionF1(other string, buf []byte) (float64, []byte) {
	var raw uint64
	rest := 0.0
	afterSwitch := false
	for i := 0; ; {
		w, _, end, ok := nextWord(other, i, buf)
		if !ok {
			break
		}
		buf, i = w, end
		w, afterSwitch = switched(w, afterSwitch), switchVerbs.has(w)
		if stopwords.has(w) || (len(w) == 1 && !isDigits(string(w))) {
			continue
		}
		s := stem(w)
		if id, ok := q.lookup(s); ok {
			raw |= 1 << id
			continue
		}
		if genericWords.has(s) {
			rest += genericWeight
		} else {
			rest++
		}
	}
	mask, syn := q.resolve(raw)
	if mask&^q.generic == 0 {
		return 0, buf
	}
	overlap := credit(mask, syn, q.base)
	return 2 * overlap / (q.baseTotal + overlap + rest), buf
}

// addressEnd returns where the web address that the word at
// text[start:end] opens ends, or 0 when the word opens none: the target
// of a Markdown link ("[Docs](/manuals/two-factor-auth)", after i) or a
// bare address ("https://..."). A link's address repeats the words of the
// page it points to, which say nothing about what this sentence says.
func addressEnd(text string, i, start, end int) int {
	if k := strings.Index(text[i:start], "]("); k >= 0 {
		if c := strings.IndexByte(text[i+k:], ')'); c >= 0 {
			return i + k + c + 1
		}
		return len(text)
	}
	if strings.HasPrefix(text[end:], "://") {
		if c := strings.IndexAny(text[end:], " \t\n)"); c >= 0 {
			return end + c
		}
		return len(text)
	}
	return 0
}
