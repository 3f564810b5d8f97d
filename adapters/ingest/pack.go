package ingest

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
)

// unit is the smallest piece the packer moves: a whole block, a list item,
// a group of table rows or code lines, a sentence or a run of words.
type unit struct {
	text string
	// sep joins the unit to the one before it in a chunk: "\n\n" between
	// blocks, "\n" between list items and code pieces, " " between
	// sentences and word runs.
	sep    string
	tokens int
	// atomic units (code, table pieces) are repeated whole in an overlap or
	// not at all: half a code block or a table without its header misleads.
	atomic bool
}

// sepTokens is what the packer reckons a separator costs. Merging across
// the separator usually makes the real figure smaller; the exact count of
// every chunk is checked before it is emitted anyway.
const sepTokens = 1

// units turns blocks into units of at most budget tokens each.
func (c *Chunker) units(blocks []mdBlock, budget int) []unit {
	var out []unit
	for _, b := range blocks {
		first := len(out)
		out = append(out, c.blockUnits(b, budget)...)
		if first < len(out) {
			out[first].sep = "\n\n"
		}
	}
	return out
}

func (c *Chunker) blockUnits(b mdBlock, budget int) []unit {
	atomic := b.kind == kindFenced || b.kind == kindIndented || b.kind == kindTable
	if t := c.CountTokens(b.text); t <= budget {
		return []unit{{text: b.text, tokens: t, atomic: atomic}}
	}
	switch b.kind {
	case kindList:
		var out []unit
		for _, item := range b.parts {
			us := c.textUnits(item, budget)
			if len(us) > 0 {
				us[0].sep = "\n"
			}
			out = append(out, us...)
		}
		return out
	case kindTable:
		return c.tableUnits(b.text, budget)
	case kindFenced:
		return c.codeUnits(b.text, budget, true)
	case kindIndented:
		return c.codeUnits(b.text, budget, false)
	}
	return c.textUnits(b.text, budget)
}

// textUnits splits prose: whole if it fits, else by sentences, and a
// sentence over the budget by words.
func (c *Chunker) textUnits(s string, budget int) []unit {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if t := c.CountTokens(s); t <= budget {
		return []unit{{text: s, sep: " ", tokens: t}}
	}
	var out []unit
	for _, sent := range splitSentences(s) {
		if n := c.CountTokens(sent); n <= budget {
			out = append(out, unit{text: sent, sep: " ", tokens: n})
			continue
		}
		out = append(out, c.wordUnits(sent, budget)...)
	}
	return out
}

// wordUnits cuts s into runs of at most budget tokens, at word boundaries
// where there is one within the window and else at any token boundary that
// does not split a character (a 2,000-character identifier is not a word
// anyone searches for, but its text must not be lost).
func (c *Chunker) wordUnits(s string, budget int) []unit {
	budget = max(budget, 1)
	_, toks, err := c.codec.Encode(s)
	offs := make([]int, 0, len(toks)+1)
	off := 0
	for _, t := range toks {
		offs = append(offs, off)
		off += len(t)
	}
	if err != nil || off != len(s) {
		return c.fieldUnits(s, budget)
	}
	offs = append(offs, len(s))
	var out []unit
	for a := 0; a < len(toks); {
		b := min(a+budget, len(toks))
		if b < len(toks) {
			cut := -1
			for j := b; j > a; j-- {
				if r, _ := utf8.DecodeRuneInString(s[offs[j]:]); unicode.IsSpace(r) {
					cut = j
					break
				}
			}
			if cut < 0 {
				for j := b; j > a; j-- {
					if utf8.RuneStart(s[offs[j]]) {
						cut = j
						break
					}
				}
			}
			if cut > a {
				b = cut
			}
		}
		piece := strings.TrimSpace(s[offs[a]:offs[b]])
		if piece != "" {
			out = append(out, unit{text: piece, sep: " ", tokens: c.CountTokens(piece)})
		}
		a = b
	}
	return out
}

// fieldUnits is wordUnits' fallback: whole whitespace-separated words.
func (c *Chunker) fieldUnits(s string, budget int) []unit {
	var out []unit
	words := strings.Fields(s)
	for len(words) > 0 {
		n := c.fitWords(words, budget, false)
		piece := strings.Join(words[:n], " ")
		out = append(out, unit{text: piece, sep: " ", tokens: c.CountTokens(piece)})
		words = words[n:]
	}
	return out
}

// fitWords returns how many words from the front (or the back, when
// fromEnd) fit in limit tokens; at least one from the front so callers
// always progress, possibly zero from the back.
func (c *Chunker) fitWords(words []string, limit int, fromEnd bool) int {
	pick := func(k int) string {
		if fromEnd {
			return strings.Join(words[len(words)-k:], " ")
		}
		return strings.Join(words[:k], " ")
	}
	lo, hi := 0, len(words)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.CountTokens(pick(mid)) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 && !fromEnd {
		return 1
	}
	return lo
}

// tableUnits cuts a Markdown table into groups of rows, each group a table
// of its own that repeats the header, so every piece can be read alone.
func (c *Chunker) tableUnits(s string, budget int) []unit {
	lines := strings.Split(s, "\n")
	if len(lines) < 3 {
		return c.textUnits(s, budget)
	}
	header := lines[0] + "\n" + lines[1]
	headerTokens := c.CountTokens(header)
	rows := lines[2:]
	if headerTokens > budget/2 {
		header, headerTokens, rows = "", 0, lines
	}
	var out []unit
	var group []string
	est := headerTokens
	flush := func() {
		if len(group) == 0 {
			return
		}
		text := strings.Join(group, "\n")
		if header != "" {
			text = header + "\n" + text
		}
		out = append(out, unit{text: text, sep: "\n\n", tokens: c.CountTokens(text), atomic: true})
		group, est = nil, headerTokens
	}
	for _, row := range rows {
		n := c.CountTokens(row) + sepTokens
		if headerTokens+n > budget {
			flush()
			us := c.textUnits(row, budget)
			if len(us) > 0 {
				us[0].sep = "\n"
			}
			out = append(out, us...)
			continue
		}
		if est+n > budget {
			flush()
		}
		group = append(group, row)
		est += n
	}
	flush()
	return out
}

// codeUnits cuts code into groups of lines; fenced pieces are fenced again
// so each stays a code block.
func (c *Chunker) codeUnits(s string, budget int, fenced bool) []unit {
	lines := strings.Split(s, "\n")
	open, closing := "", ""
	if fenced && len(lines) > 0 {
		open = lines[0]
		lines = lines[1:]
		fence := strings.TrimLeft(open, " ")
		if fence != "" {
			fence = fence[:len(fence)-len(strings.TrimLeft(fence, fence[:1]))]
		}
		closing = fence
		if n := len(lines); n > 0 && strings.HasPrefix(strings.TrimSpace(lines[n-1]), fence) {
			lines = lines[:n-1]
		}
	}
	wrapTokens := 0
	if fenced {
		wrapTokens = c.CountTokens(open+"\n") + c.CountTokens("\n"+closing)
	}
	var out []unit
	var group []string
	est := wrapTokens
	flush := func() {
		if len(group) == 0 {
			return
		}
		text := strings.Join(group, "\n")
		if fenced {
			text = open + "\n" + text + "\n" + closing
		}
		out = append(out, unit{text: text, sep: "\n", tokens: c.CountTokens(text), atomic: true})
		group, est = nil, wrapTokens
	}
	for _, line := range lines {
		n := c.CountTokens(line) + sepTokens
		if wrapTokens+n > budget {
			flush()
			out = append(out, c.textUnits(line, budget)...)
			continue
		}
		if est+n > budget {
			flush()
		}
		group = append(group, line)
		est += n
	}
	flush()
	if len(out) > 0 {
		out[0].sep = "\n\n"
	}
	return out
}

// splitSentences cuts prose after sentence-ending punctuation followed by
// space (or after CJK full stops), and at blank lines. Abbreviations such as
// "e.g." cut too early; that only moves a chunk boundary.
func splitSentences(s string) []string {
	var out []string
	start := 0
	cut := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, t)
		}
		start = end
	}
	absorbClosers := func(j int) int {
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if !strings.ContainsRune(")]}\"'”’»", r) {
				break
			}
			j += n
		}
		return j
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch r {
		case '.', '!', '?', '…', ';':
			j := absorbClosers(i)
			if j == len(s) {
				break
			}
			if nr, _ := utf8.DecodeRuneInString(s[j:]); unicode.IsSpace(nr) {
				cut(j)
				i = j
			}
		case '。', '！', '？', '；':
			j := absorbClosers(i)
			cut(j)
			i = j
		case '\n':
			if i < len(s) && s[i] == '\n' {
				cut(i)
			}
		}
	}
	cut(len(s))
	return out
}

// head is the heading path line that starts a chunk.
type head struct {
	path   []string
	line   string
	tokens int
}

func (c *Chunker) head(path []string) head {
	h := head{path: path, line: pathLine(path)}
	if h.line == "" {
		return h
	}
	h.tokens = c.CountTokens(h.line + "\n")
	if h.tokens > c.maxTokens/2 {
		h.line = c.truncate(h.line, c.maxTokens/2)
		h.tokens = c.CountTokens(h.line + "\n")
	}
	return h
}

// packer emits the chunks of one document.
type packer struct {
	c   *Chunker
	url string
	out []domain.ChunkDraft
}

// emitGroup chunks one section, or tiny sections merged with the section
// after them (the last of the group), whose first chunk then starts with
// the merged sections under their common path.
func (p *packer) emitGroup(group []*section) {
	last := group[len(group)-1]
	rest := head{path: last.path, line: last.header, tokens: last.headerTokens}
	if len(group) == 1 {
		p.pack(last.units, rest, rest)
		return
	}
	common := commonPath(group)
	first := p.c.head(common)
	var lead strings.Builder
	prev := common
	for i, s := range group {
		k := max(lcp(prev, s.path), len(common))
		for j := k; j < len(s.path); j++ {
			lead.WriteString(strings.Repeat("#", s.levels[j]) + " " + s.path[j] + "\n\n")
		}
		if i < len(group)-1 {
			for _, b := range s.blocks {
				lead.WriteString(b.text + "\n\n")
			}
		}
		prev = s.path
	}
	units := p.c.textUnits(lead.String(), p.c.budget(first.tokens))
	if len(units) > 0 {
		units[0].sep = "\n\n"
	}
	p.pack(append(units, last.units...), first, rest)
}

// pack fills chunks greedily with units; first heads the first chunk and
// rest the others.
func (p *packer) pack(units []unit, first, rest head) {
	if len(units) == 0 {
		if first.line != "" {
			p.emit(first, nil)
		}
		return
	}
	c := p.c
	queue := append([]unit(nil), units...)
	h := first
	var carry []unit // overlap from the previous chunk
	for len(queue) > 0 {
		budget := c.budget(h.tokens)
		cur := carry
		est := sumTokens(cur)
		for len(cur) > 0 && est+sepTokens+queue[0].tokens > budget {
			cur = cur[1:]
			est = sumTokens(cur)
		}
		n := 0
		for n < len(queue) {
			add := queue[n].tokens
			if len(cur)+n > 0 {
				add += sepTokens
			}
			if n > 0 && est+add > budget {
				break
			}
			est += add
			n++
		}
		// The estimate is close but not exact: confirm, and give back
		// units (then the overlap) until the chunk fits.
		var text string
		var tokens int
		for {
			text = render(h, cur, queue[:n])
			tokens = c.CountTokens(text)
			if tokens <= c.maxTokens {
				break
			}
			if n > 1 {
				n--
				continue
			}
			if len(cur) > 0 {
				cur = nil
				continue
			}
			// One unit alone is too big: cut it smaller and start over.
			smaller := c.wordUnits(queue[0].text, max(budget/2, 1))
			if len(smaller) < 2 {
				// Cannot happen with a sane tokenizer; halving still
				// guarantees progress.
				r := []rune(queue[0].text)
				smaller = smaller[:0]
				for _, half := range []string{string(r[:len(r)/2]), string(r[len(r)/2:])} {
					if half != "" {
						smaller = append(smaller, unit{text: half, sep: " ", tokens: c.CountTokens(half)})
					}
				}
			}
			smaller[0].sep = queue[0].sep
			queue = append(smaller, queue[1:]...)
			text = ""
			break
		}
		if text == "" {
			continue
		}
		p.out = append(p.out, domain.ChunkDraft{
			Ordinal: len(p.out),
			Heading: pathLine(h.path),
			Text:    text,
			Tokens:  tokens,
			URL:     p.url,
		})
		taken := append(append([]unit(nil), cur...), queue[:n]...)
		queue = queue[n:]
		carry = c.tail(taken)
		h = rest
	}
}

func (p *packer) emit(h head, units []unit) {
	text := render(h, nil, units)
	p.out = append(p.out, domain.ChunkDraft{
		Ordinal: len(p.out),
		Heading: pathLine(h.path),
		Text:    text,
		Tokens:  p.c.CountTokens(text),
		URL:     p.url,
	})
}

func render(h head, carry, fresh []unit) string {
	var b strings.Builder
	if h.line != "" {
		b.WriteString(h.line)
		if len(carry)+len(fresh) > 0 {
			b.WriteByte('\n')
		}
	}
	n := 0
	for _, us := range [][]unit{carry, fresh} {
		for _, u := range us {
			if n > 0 {
				b.WriteString(u.sep)
			}
			b.WriteString(u.text)
			n++
		}
	}
	return b.String()
}

func sumTokens(us []unit) int {
	t := 0
	for i, u := range us {
		t += u.tokens
		if i > 0 {
			t += sepTokens
		}
	}
	return t
}

// tail picks the overlap for the next chunk: whole units from the end of
// units up to the overlap; then, from the first unit that does not fit,
// its last whole sentences; and when not even one sentence fits and
// nothing was taken yet, its last words.
func (c *Chunker) tail(units []unit) []unit {
	room := c.overlap
	var out []unit
	for i := len(units) - 1; i >= 0 && room > 0; i-- {
		u := units[i]
		if u.tokens+sepTokens <= room {
			out = append([]unit{u}, out...)
			room -= u.tokens + sepTokens
			continue
		}
		if u.atomic {
			break
		}
		sents := splitSentences(u.text)
		var part []unit
		for j := len(sents) - 1; j >= 0; j-- {
			n := c.CountTokens(sents[j])
			if n+sepTokens > room {
				break
			}
			part = append([]unit{{text: sents[j], sep: " ", tokens: n}}, part...)
			room -= n + sepTokens
		}
		if len(part) == 0 && len(out) == 0 && len(sents) > 0 {
			words := strings.Fields(sents[len(sents)-1])
			if k := c.fitWords(words, room-sepTokens, true); k > 0 {
				text := strings.Join(words[len(words)-k:], " ")
				part = []unit{{text: text, sep: " ", tokens: c.CountTokens(text)}}
			}
		}
		out = append(part, out...)
		break
	}
	return out
}
