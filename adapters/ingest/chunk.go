package ingest

import (
	"fmt"
	"strings"

	"github.com/tiktoken-go/tokenizer"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.Chunker = (*Chunker)(nil)

// Chunker defaults and limits.
const (
	// DefaultMaxTokens is the chunk budget when ChunkerOptions.MaxTokens is 0.
	DefaultMaxTokens = 350
	// DefaultOverlapTokens is the overlap when ChunkerOptions.OverlapTokens is
	// 0 and MaxTokens leaves room for it.
	DefaultOverlapTokens = 50
	// MinMaxTokens is the smallest budget accepted: below it a heading path
	// line leaves no room for text.
	MinMaxTokens = 32
)

// ChunkerOptions configure a Chunker. Zero values mean the defaults.
type ChunkerOptions struct {
	// MaxTokens caps every chunk's Text, heading path line included, in
	// cl100k_base tokens. 0 means DefaultMaxTokens; at least MinMaxTokens.
	MaxTokens int
	// OverlapTokens is about how much of the end of a chunk is repeated at
	// the start of the next chunk of the same section. 0 means
	// DefaultOverlapTokens (or MaxTokens/7 when that is smaller); a negative
	// value turns overlap off. It must be less than MaxTokens/2.
	OverlapTokens int
	// MinSectionTokens: a section (heading path line plus body) smaller than
	// this is not a chunk of its own but is carried into the next section
	// of the same parent. 0 means MaxTokens/7 (50 for the default budget);
	// a negative value turns merging off.
	MinSectionTokens int
}

// Chunker splits Markdown-like documents into chunks within a token budget,
// under their heading paths. It implements ports.Chunker.
//
// Sections come from goldmark's AST (so '#' lines inside fenced code are not
// headings). Within a section, whole blocks (paragraphs, lists, tables, code)
// are packed greedily; a block over the budget is split into list items,
// table rows (each group repeating the table's header), code lines (each
// piece re-fenced), then sentences, then words. Consecutive chunks of one
// section overlap by up to OverlapTokens of whole units, cut at sentence and
// then word boundaries when the last unit is longer than the overlap; code
// and table pieces are repeated whole or not at all.
//
// Tiny sections are merged forward: a section under MinSectionTokens (a
// heading with one line, an empty parent heading, a short preamble) is
// carried into the next section when that section is a sibling of it or a
// child of it, and so on while the merged group stays under
// MinSectionTokens (siblings of the group's first section, children of any
// of its sections). The merged chunk's Heading is the group's common path, and its text
// keeps the merged headings as Markdown '#' lines, so no heading is lost; the
// next section's later chunks have its own full path. A tiny section with no
// such neighbour (the last one, or one followed by a shallower heading) stays
// a chunk of its own.
//
// A Chunker is safe for concurrent use: the tokenizer is built once and only
// read (tiktoken-go's codec reads its vocabulary map and a regexp2 pattern,
// which is documented safe for concurrent use; we never change its error mode
// after construction), goldmark's parser keeps per-call state in a context
// of its own, and Chunk keeps its state on the stack.
type Chunker struct {
	codec      tokenizer.Codec
	md         goldmark.Markdown
	maxTokens  int
	overlap    int
	minSection int
}

// NewChunker builds a Chunker with the cl100k_base tokenizer. It returns an
// error when the options are inconsistent.
func NewChunker(opts ChunkerOptions) (*Chunker, error) {
	maxTokens := opts.MaxTokens
	switch {
	case maxTokens == 0:
		maxTokens = DefaultMaxTokens
	case maxTokens < MinMaxTokens:
		return nil, fmt.Errorf("ingest: MaxTokens %d is below the minimum of %d", maxTokens, MinMaxTokens)
	}
	overlap := opts.OverlapTokens
	switch {
	case overlap == 0:
		overlap = min(DefaultOverlapTokens, maxTokens/7)
	case overlap < 0:
		overlap = 0
	case overlap >= maxTokens/2:
		return nil, fmt.Errorf("ingest: OverlapTokens %d must be less than MaxTokens/2 (%d)", overlap, maxTokens/2)
	}
	minSection := opts.MinSectionTokens
	switch {
	case minSection == 0:
		minSection = maxTokens / 7
	case minSection < 0:
		minSection = 0
	case minSection > maxTokens/2:
		return nil, fmt.Errorf("ingest: MinSectionTokens %d must be at most MaxTokens/2 (%d)", minSection, maxTokens/2)
	}
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		return nil, fmt.Errorf("ingest: tokenizer: %w", err)
	}
	return &Chunker{
		codec:      codec,
		md:         goldmark.New(goldmark.WithExtensions(extension.Table)),
		maxTokens:  maxTokens,
		overlap:    overlap,
		minSection: minSection,
	}, nil
}

// MaxTokens is the chunk budget in force.
func (c *Chunker) MaxTokens() int { return c.maxTokens }

// CountTokens returns the number of cl100k_base tokens in s.
func (c *Chunker) CountTokens(s string) int {
	n, err := c.codec.Count(s)
	if err != nil {
		// Only strict UTF-8 mode or a regexp timeout can fail, and we set
		// neither; an estimate keeps the budget meaningful regardless.
		return (len(s) + 2) / 3
	}
	return n
}

// Chunk implements ports.Chunker.
func (c *Chunker) Chunk(doc domain.Document) []domain.ChunkDraft {
	src := strings.ReplaceAll(doc.Text, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	if strings.TrimSpace(src) == "" {
		return nil
	}
	secs := c.sections([]byte(src))
	p := &packer{c: c, url: doc.URL}
	var pending []*section
	var pendingSize int
	for _, s := range secs {
		c.prepare(s)
		if len(pending) > 0 && canJoin(pending, s) {
			pending = append(pending, s)
			pendingSize += s.size
			if pendingSize < c.minSection {
				continue
			}
			p.emitGroup(pending)
			pending, pendingSize = nil, 0
			continue
		}
		if len(pending) > 0 {
			p.emitGroup(pending)
			pending, pendingSize = nil, 0
		}
		if s.size < c.minSection {
			pending, pendingSize = []*section{s}, s.size
			continue
		}
		p.emitGroup([]*section{s})
	}
	if len(pending) > 0 {
		p.emitGroup(pending)
	}
	return p.out
}

// canJoin reports whether s may be merged with the pending tiny sections:
// s must be a sibling of the first of them or a child of one of them, so
// the merged chunk reads as one subtree. (The preamble, with no heading,
// counts as a sibling of the top-level headings.)
func canJoin(pending []*section, s *section) bool {
	parent := parentPath(s.path)
	if equalPath(parent, parentPath(pending[0].path)) {
		return true
	}
	for _, p := range pending {
		if len(p.path) > 0 && equalPath(parent, p.path) {
			return true
		}
	}
	return false
}

func parentPath(p []string) []string {
	if len(p) == 0 {
		return nil
	}
	return p[:len(p)-1]
}

func equalPath(a, b []string) bool {
	return len(a) == len(b) && lcp(a, b) == len(a)
}

func commonPath(secs []*section) []string {
	common := secs[0].path
	for _, s := range secs[1:] {
		common = common[:lcp(common, s.path)]
	}
	return common
}

func lcp(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func pathLine(path []string) string { return strings.Join(path, " > ") }

// prepare turns a section's blocks into units within the budget left by its
// heading path line, and measures the section.
func (c *Chunker) prepare(s *section) {
	header := pathLine(s.path)
	s.header = header
	s.headerTokens = 0
	if header != "" {
		s.headerTokens = c.CountTokens(header + "\n")
	}
	blocks := s.blocks
	if s.headerTokens > c.maxTokens/2 {
		// A pathological heading path: shorten the line that starts each
		// chunk and keep the section's own heading as body text, so its
		// words are still indexed.
		s.header = c.truncate(header, c.maxTokens/2)
		s.headerTokens = c.CountTokens(s.header + "\n")
		own := s.path[len(s.path)-1]
		blocks = append([]mdBlock{{kind: kindText, text: own}}, blocks...)
	}
	s.units = c.units(blocks, c.budget(s.headerTokens))
	s.size = s.headerTokens
	for _, u := range s.units {
		s.size += u.tokens + 1
	}
}

// budget is the room for content in a chunk whose heading line costs
// headerTokens.
func (c *Chunker) budget(headerTokens int) int {
	return c.maxTokens - headerTokens
}

// truncate cuts s at a word boundary so that it (plus an ellipsis) fits in
// limit tokens.
func (c *Chunker) truncate(s string, limit int) string {
	words := strings.Fields(s)
	lo, hi := 0, len(words)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.CountTokens(strings.Join(words[:mid], " ")+" …\n") <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		r := []rune(s)
		return string(r[:min(len(r), limit)]) + " …"
	}
	return strings.Join(words[:lo], " ") + " …"
}
