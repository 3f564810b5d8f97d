package ingest

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// section is the text under one heading, up to the next heading.
type section struct {
	path   []string // heading texts from the top
	levels []int    // the '#' level of each heading in path
	blocks []mdBlock

	// Set by Chunker.prepare.
	header       string
	headerTokens int
	units        []unit
	size         int
}

type blockKind int

const (
	kindText blockKind = iota
	kindList
	kindTable
	kindFenced
	kindIndented
)

// mdBlock is one top-level Markdown block, as written in the source.
type mdBlock struct {
	kind blockKind
	text string
	// parts are the list items of a list, in order; their concatenation is
	// text.
	parts []string
}

// sections parses src and cuts it at headings. Every byte of src between
// two top-level block starts belongs to the first of them, so no text is
// lost even where goldmark gives a node no position.
func (c *Chunker) sections(src []byte) []*section {
	root := c.md.Parser().Parse(text.NewReader(src))
	type top struct {
		n     ast.Node
		start int
	}
	var tops []top
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		p := n.Pos()
		if p < 0 {
			continue
		}
		s := lineStart(src, p)
		if len(tops) > 0 && s <= tops[len(tops)-1].start {
			continue
		}
		tops = append(tops, top{n, s})
	}
	if len(tops) == 0 {
		return []*section{{blocks: []mdBlock{{kind: kindText, text: strings.TrimSpace(string(src))}}}}
	}
	tops[0].start = 0

	cur := &section{}
	secs := []*section{cur}
	var path []string
	var levels []int
	for i, t := range tops {
		end := len(src)
		if i+1 < len(tops) {
			end = tops[i+1].start
		}
		raw := src[t.start:end]
		h, ok := t.n.(*ast.Heading)
		if !ok {
			if b, ok := newBlock(t.n, src, t.start, end); ok {
				cur.blocks = append(cur.blocks, b)
			}
			continue
		}
		headEnd := headingEnd(h, src, t.start, end)
		title := headingText(h, src)
		if title == "" {
			// "##" alone, or a heading of an image only: keep whatever
			// characters it has as text rather than a nameless section.
			if s := strings.TrimSpace(strings.Trim(strings.TrimSpace(string(src[t.start:headEnd])), "#=-")); s != "" {
				cur.blocks = append(cur.blocks, mdBlock{kind: kindText, text: s})
			}
		} else {
			for len(levels) > 0 && levels[len(levels)-1] >= h.Level {
				levels = levels[:len(levels)-1]
				path = path[:len(path)-1]
			}
			path = append(path, title)
			levels = append(levels, h.Level)
			cur = &section{path: append([]string(nil), path...), levels: append([]int(nil), levels...)}
			secs = append(secs, cur)
		}
		if rest := bytes.TrimSpace(raw[headEnd-t.start:]); len(rest) > 0 {
			cur.blocks = append(cur.blocks, mdBlock{kind: kindText, text: string(rest)})
		}
	}
	// Drop sections that are empty (a preamble of nothing), keeping headed
	// ones: their heading is text too.
	out := secs[:0]
	for _, s := range secs {
		if len(s.path) > 0 || len(s.blocks) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func newBlock(n ast.Node, src []byte, start, end int) (mdBlock, bool) {
	raw := strings.TrimSpace(string(src[start:end]))
	if raw == "" {
		return mdBlock{}, false
	}
	b := mdBlock{kind: kindText, text: raw}
	switch n.Kind() {
	case ast.KindList:
		b.kind = kindList
		var starts []int
		for it := n.FirstChild(); it != nil; it = it.NextSibling() {
			if p := it.Pos(); p >= 0 {
				s := lineStart(src, p)
				if s >= start && s < end && (len(starts) == 0 || s > starts[len(starts)-1]) {
					starts = append(starts, s)
				}
			}
		}
		if len(starts) == 0 {
			b.kind = kindText
			break
		}
		starts[0] = start
		for i, s := range starts {
			e := end
			if i+1 < len(starts) {
				e = starts[i+1]
			}
			if item := strings.TrimSpace(string(src[s:e])); item != "" {
				b.parts = append(b.parts, item)
			}
		}
	case east.KindTable:
		b.kind = kindTable
	case ast.KindFencedCodeBlock:
		b.kind = kindFenced
	case ast.KindCodeBlock:
		b.kind = kindIndented
		// TrimSpace took the first line's indentation: keep it, it is what
		// makes the block code.
		b.text = strings.TrimRight(strings.TrimLeft(string(src[start:end]), "\n"), " \t\n")
	}
	return b, true
}

// headingEnd is the offset just past a heading's own lines: the ATX line, or
// a setext heading's text lines and underline.
func headingEnd(h *ast.Heading, src []byte, start, end int) int {
	lineEnd := func(off int) int {
		if i := bytes.IndexByte(src[off:end], '\n'); i >= 0 {
			return off + i + 1
		}
		return end
	}
	lines := h.Lines()
	atx := bytes.HasPrefix(bytes.TrimLeft(src[start:end], " "), []byte("#"))
	if lines.Len() == 0 {
		return lineEnd(start)
	}
	last := lines.At(lines.Len() - 1)
	e := lineEnd(min(max(last.Stop-1, start), end))
	if !atx && e < end {
		e = lineEnd(e) // the underline
	}
	return e
}

// headingText is a heading's plain text: inline markup, link targets and
// raw HTML dropped, whitespace collapsed.
func headingText(h *ast.Heading, src []byte) string {
	var b strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				b.Write(t.Segment.Value(src))
				if t.SoftLineBreak() || t.HardLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(t.Value)
			case *ast.AutoLink:
				b.Write(t.Label(src))
			case *ast.RawHTML:
			default:
				walk(c)
			}
		}
	}
	walk(h)
	return strings.Join(strings.Fields(b.String()), " ")
}

func lineStart(src []byte, off int) int {
	off = min(off, len(src))
	if i := bytes.LastIndexByte(src[:off], '\n'); i >= 0 {
		return i + 1
	}
	return 0
}
