package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/conciergehq/concierge/core/domain"
)

func newChunker(t testing.TB, opts ChunkerOptions) *Chunker {
	t.Helper()
	c, err := NewChunker(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewChunkerOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    ChunkerOptions
		wantErr string
		max     int
		overlap int
		min     int
	}{
		{name: "defaults", max: 350, overlap: 50, min: 50},
		{name: "small budget scales the default overlap", opts: ChunkerOptions{MaxTokens: 70}, max: 70, overlap: 10, min: 10},
		{name: "overlap just under half", opts: ChunkerOptions{MaxTokens: 100, OverlapTokens: 49}, max: 100, overlap: 49, min: 14},
		{name: "overlap off", opts: ChunkerOptions{OverlapTokens: -1}, max: 350, overlap: 0, min: 50},
		{name: "merging off", opts: ChunkerOptions{MinSectionTokens: -1}, max: 350, overlap: 50, min: 0},
		{name: "overlap of half", opts: ChunkerOptions{MaxTokens: 100, OverlapTokens: 50}, wantErr: "ingest: OverlapTokens 50 must be less than MaxTokens/2 (50)"},
		{name: "default budget, overlap too big", opts: ChunkerOptions{OverlapTokens: 200}, wantErr: "ingest: OverlapTokens 200 must be less than MaxTokens/2 (175)"},
		{name: "budget too small", opts: ChunkerOptions{MaxTokens: 10}, wantErr: "ingest: MaxTokens 10 is below the minimum of 32"},
		{name: "negative budget", opts: ChunkerOptions{MaxTokens: -5}, wantErr: "ingest: MaxTokens -5 is below the minimum of 32"},
		{name: "min section too big", opts: ChunkerOptions{MinSectionTokens: 200}, wantErr: "ingest: MinSectionTokens 200 must be at most MaxTokens/2 (175)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewChunker(tt.opts)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.MaxTokens() != tt.max || c.overlap != tt.overlap || c.minSection != tt.min {
				t.Errorf("max, overlap, min = %d, %d, %d; want %d, %d, %d", c.MaxTokens(), c.overlap, c.minSection, tt.max, tt.overlap, tt.min)
			}
		})
	}
}

// words are the lower-cased runs of letters and digits of s: what must
// survive chunking, whatever happens to markup and spacing.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// checkChunks asserts the invariants every chunking must keep.
func checkChunks(t *testing.T, c *Chunker, doc domain.Document, chunks []domain.ChunkDraft) {
	t.Helper()
	if strings.TrimSpace(doc.Text) != "" && len(chunks) == 0 {
		t.Fatal("no chunks for a document with text")
	}
	seen := map[string]bool{}
	for i, ch := range chunks {
		if ch.Ordinal != i {
			t.Errorf("chunk %d: Ordinal = %d", i, ch.Ordinal)
		}
		if got := c.CountTokens(ch.Text); ch.Tokens != got {
			t.Errorf("chunk %d: Tokens = %d, but Text has %d", i, ch.Tokens, got)
		}
		if ch.Tokens > c.MaxTokens() {
			t.Errorf("chunk %d: %d tokens, over the budget of %d:\n%s", i, ch.Tokens, c.MaxTokens(), ch.Text)
		}
		if ch.Heading != "" {
			// The first line is the heading path, or its start cut with
			// an ellipsis when the path would take over half the budget.
			line, _, _ := strings.Cut(ch.Text, "\n")
			cut, truncated := strings.CutSuffix(line, " …")
			if line != ch.Heading && !(truncated && strings.HasPrefix(ch.Heading, cut)) {
				t.Errorf("chunk %d: Text does not start with its heading path %q:\n%s", i, ch.Heading, ch.Text)
			}
		}
		if ch.URL != doc.URL {
			t.Errorf("chunk %d: URL = %q, want %q", i, ch.URL, doc.URL)
		}
		if strings.TrimSpace(ch.Text) == "" {
			t.Errorf("chunk %d is blank", i)
		}
		for _, w := range words(ch.Text) {
			seen[w] = true
		}
	}
	var lost []string
	for _, w := range words(doc.Text) {
		if !seen[w] {
			lost = append(lost, w)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d words lost, e.g. %q", len(lost), lost[:min(len(lost), 10)])
	}
}

func TestChunkFixtures(t *testing.T) {
	e := NewExtractor(ExtractorOptions{PureGoPDF: true})
	budgets := []ChunkerOptions{
		{},
		{MaxTokens: 48, OverlapTokens: 12},
		{MaxTokens: 32, OverlapTokens: -1, MinSectionTokens: -1},
	}
	for _, f := range []string{"sample.md", "sample.txt", "sample.html", "sample.pdf", "sample.docx", "sample.csv"} {
		doc, err := e.Extract(context.Background(), f, readFixture(t, f))
		if err != nil {
			t.Fatal(err)
		}
		doc.URL = "https://kb.example.test/" + f
		for _, opts := range budgets {
			t.Run(fmt.Sprintf("%s/max=%d", f, opts.MaxTokens), func(t *testing.T) {
				c := newChunker(t, opts)
				chunks := c.Chunk(doc)
				checkChunks(t, c, doc, chunks)
				if again := c.Chunk(doc); !reflect.DeepEqual(chunks, again) {
					t.Error("chunking the same document twice gave different chunks")
				}
			})
		}
	}
}

func TestChunkHeadingPaths(t *testing.T) {
	src := strings.Join([]string{
		"Intro text before any heading, long enough to stand on its own as a chunk of the document for sure.",
		"# Install",
		"Install text that is long enough to be a section of its own, with several words in it, really.",
		"## Linux",
		"Linux text that is long enough to be a section of its own, with several words in it, really.",
		"### Debian",
		"Debian text that is long enough to be a section of its own, with several words in it, really.",
		"## Windows",
		"Windows text that is long enough to be a section of its own, with several words in it, really.",
		"# Use",
		"Use text that is long enough to be a section of its own, with several words in it, really.",
		"Setext heading\n--------------",
		"Setext text that is long enough to be a section of its own, with several words in it, really.",
		"```md",
		"# not a heading inside code",
		"```",
	}, "\n\n")
	tests := []struct {
		name     string
		opts     ChunkerOptions
		headings []string
	}{
		{
			name:     "one chunk per section",
			opts:     ChunkerOptions{MinSectionTokens: 1},
			headings: []string{"", "Install", "Install > Linux", "Install > Linux > Debian", "Install > Windows", "Use", "Use > Setext heading"},
		},
		{
			// Every section is about 25 tokens: the preamble takes in
			// Install (a sibling) and Linux (its child) and is then big
			// enough. Debian alone is tiny, but Windows is neither its
			// sibling nor its child; Use takes in its child, the setext
			// heading.
			name:     "tiny sections merged",
			opts:     ChunkerOptions{MinSectionTokens: 60},
			headings: []string{"", "Install > Linux > Debian", "Install > Windows", "Use"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChunker(t, tt.opts)
			doc := domain.Document{Text: src}
			chunks := c.Chunk(doc)
			checkChunks(t, c, doc, chunks)
			var got []string
			for _, ch := range chunks {
				got = append(got, ch.Heading)
			}
			if !reflect.DeepEqual(got, tt.headings) {
				for _, ch := range chunks {
					t.Logf("--- %q\n%s", ch.Heading, ch.Text)
				}
				t.Fatalf("headings = %q, want %q", got, tt.headings)
			}
		})
	}
}

func TestChunkMergedSectionsKeepTheirHeadings(t *testing.T) {
	c := newChunker(t, ChunkerOptions{})
	doc := domain.Document{Text: "# Guide\n\n## Short\n\nOne line.\n\n## Next\n\nAnother line here."}
	chunks := c.Chunk(doc)
	checkChunks(t, c, doc, chunks)
	want := "Guide\n## Short\n\nOne line.\n\n## Next\n\nAnother line here."
	if len(chunks) != 1 || chunks[0].Heading != "Guide" || chunks[0].Text != want {
		t.Fatalf("chunks = %#v, want one chunk under Guide with text %q", chunks, want)
	}
}

// sentences numbers its sentences so a test can tell them apart.
func sentences(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Sentence %d explains one more detail about the billing settings. ", i)
	}
	return strings.TrimSpace(b.String())
}

func TestChunkOverlap(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{"one long paragraph", "# Billing\n\n" + sentences(40)},
		{"many paragraphs", "# Billing\n\n" + strings.ReplaceAll(sentences(40), ". ", ".\n\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChunker(t, ChunkerOptions{MaxTokens: 80, OverlapTokens: 30})
			doc := domain.Document{Text: tt.text}
			chunks := c.Chunk(doc)
			checkChunks(t, c, doc, chunks)
			if len(chunks) < 4 {
				t.Fatalf("%d chunks; want the section split", len(chunks))
			}
			for i := 1; i < len(chunks); i++ {
				prev := strings.TrimPrefix(chunks[i-1].Text, "Billing\n")
				cur := strings.TrimPrefix(chunks[i].Text, "Billing\n")
				// The chunk starts with the previous one's last sentence,
				// whole.
				first, _, _ := strings.Cut(cur, ".")
				if !strings.HasPrefix(first, "Sentence ") || !strings.Contains(prev, first+".") {
					t.Errorf("chunk %d does not start with a sentence of chunk %d:\n%s\n---\n%s", i, i-1, prev, cur)
				}
				if overlap := c.CountTokens(first + "."); overlap > 30 {
					t.Errorf("chunk %d: overlap of %d tokens", i, overlap)
				}
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		c := newChunker(t, ChunkerOptions{MaxTokens: 80, OverlapTokens: -1})
		doc := domain.Document{Text: "# Billing\n\n" + sentences(40)}
		chunks := c.Chunk(doc)
		checkChunks(t, c, doc, chunks)
		var total int
		for _, ch := range chunks {
			total += strings.Count(ch.Text, "Sentence ")
		}
		if total != 40 {
			t.Errorf("%d sentences in all chunks, want each of the 40 once", total)
		}
	})
}

func TestChunkBlocks(t *testing.T) {
	code := "```go\n" + strings.Repeat("fmt.Println(\"hello\") // prints\n", 3) + "```"
	bigCode := "```go\n" + strings.Repeat("fmt.Println(\"hello, world\") // prints a greeting\n", 30) + "```"
	bigTable := "| Plan | Price |\n|---|---|\n" + strings.Repeat("| Starter plan for small teams | 19 USD per month |\n", 30)
	bigList := strings.Repeat("- An item of the list that says something useful about setup.\n", 30)
	r := rand.New(rand.NewPCG(3, 4))
	letters := make([]byte, 3000)
	for i := range letters {
		letters[i] = byte('a' + r.IntN(26))
	}
	giant := string(letters)
	tests := []struct {
		name  string
		text  string
		check func(t *testing.T, chunks []domain.ChunkDraft)
	}{
		{"code that fits stays whole", "# Code\n\n" + sentences(6) + "\n\n" + code + "\n\n" + sentences(6), func(t *testing.T, chunks []domain.ChunkDraft) {
			whole := 0
			for _, ch := range chunks {
				if strings.Contains(ch.Text, code) {
					whole++
				}
			}
			if whole == 0 {
				t.Error("the code block is not whole in any chunk")
			}
		}},
		{"big code is re-fenced", "# Code\n\n" + bigCode, func(t *testing.T, chunks []domain.ChunkDraft) {
			for _, ch := range chunks {
				body := strings.TrimPrefix(ch.Text, "Code\n")
				if !strings.HasPrefix(body, "```go\n") || !strings.HasSuffix(body, "\n```") {
					t.Errorf("code piece is not fenced:\n%s", ch.Text)
				}
			}
		}},
		{"big table repeats its header", "# Prices\n\n" + bigTable, func(t *testing.T, chunks []domain.ChunkDraft) {
			for _, ch := range chunks {
				if !strings.HasPrefix(ch.Text, "Prices\n| Plan | Price |\n|---|---|\n| Starter") {
					t.Errorf("table piece without its header:\n%s", ch.Text)
				}
			}
		}},
		{"big list splits between items", "# Steps\n\n" + bigList, func(t *testing.T, chunks []domain.ChunkDraft) {
			for _, ch := range chunks {
				for _, line := range strings.Split(ch.Text, "\n")[1:] {
					if !strings.HasPrefix(line, "- An item") || !strings.HasSuffix(line, "setup.") {
						t.Errorf("list item cut: %q", line)
					}
				}
			}
		}},
		{"giant word is cut, not lost", "# Blob\n\n" + giant, func(t *testing.T, chunks []domain.ChunkDraft) {
			var joined strings.Builder
			for i, ch := range chunks {
				body := strings.TrimPrefix(ch.Text, "Blob\n")
				if i > 0 {
					// Drop the overlap: the longest prefix of body that
					// ends the text so far.
					so := joined.String()
					for k := len(body); k >= 8; k-- {
						if strings.HasSuffix(so, body[:k]) {
							body = body[k:]
							break
						}
					}
				}
				joined.WriteString(strings.ReplaceAll(body, " ", ""))
			}
			if joined.String() != giant {
				t.Errorf("giant word not rebuilt from chunks (len %d vs %d)", joined.Len(), len(giant))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChunker(t, ChunkerOptions{MaxTokens: 100, OverlapTokens: 20})
			doc := domain.Document{Text: tt.text}
			chunks := c.Chunk(doc)
			if tt.name != "giant word is cut, not lost" {
				checkChunks(t, c, doc, chunks)
			} else {
				for _, ch := range chunks {
					if ch.Tokens > c.MaxTokens() {
						t.Errorf("%d tokens", ch.Tokens)
					}
				}
			}
			if len(chunks) < 2 && tt.name != "code that fits stays whole" {
				t.Fatalf("%d chunks; want the block split", len(chunks))
			}
			tt.check(t, chunks)
		})
	}
}

func TestChunkEdgeCases(t *testing.T) {
	c := newChunker(t, ChunkerOptions{MaxTokens: 40, OverlapTokens: 8})
	longHeading := "# " + strings.Repeat("Very long heading words ", 20)
	tests := []struct {
		name string
		text string
		want int // chunks; -1 for "some"
	}{
		{"empty", "", 0},
		{"blank", " \n\n\t\r\n", 0},
		{"crlf", "# A\r\n\r\nText under A.\r\n", 1},
		{"heading only", "# Lonely", 1},
		{"empty atx heading", "##\n\nText.", 1},
		{"long heading path", longHeading + "\n\n" + sentences(5), -1},
		{"cjk without spaces", "# 说明\n\n" + strings.Repeat("这是一个很长的句子没有空格但是有句号。", 20), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := domain.Document{Text: tt.text}
			chunks := c.Chunk(doc)
			if tt.want >= 0 && len(chunks) != tt.want {
				t.Fatalf("%d chunks, want %d: %#v", len(chunks), tt.want, chunks)
			}
			checkChunks(t, c, doc, chunks)
		})
	}
}

func TestChunkConcurrentUse(t *testing.T) {
	c := newChunker(t, ChunkerOptions{MaxTokens: 64})
	doc := domain.Document{Text: string(readFixture(t, "sample.md")) + "\n\n## More\n\n" + sentences(30)}
	want := c.Chunk(doc)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			if got := c.Chunk(doc); !reflect.DeepEqual(got, want) {
				errs <- "concurrent Chunk gave different chunks"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// largeMarkdown builds about n bytes of varied Markdown, the same every
// time: headings on three levels, paragraphs, lists, code and tables.
func largeMarkdown(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("account agent answer billing browser cache chat customer dashboard document email export " +
		"invoice knowledge login message origin password plan policy refund script settings source team ticket " +
		"upload visitor widget workspace the a to of and for with on is can your you it this that")
	sentence := func() string {
		k := 6 + r.IntN(18)
		ws := make([]string, k)
		for i := range ws {
			ws[i] = vocab[r.IntN(len(vocab))]
		}
		ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
		return strings.Join(ws, " ") + "."
	}
	var b strings.Builder
	for sec := 0; b.Len() < n; sec++ {
		level := 1 + r.IntN(3)
		fmt.Fprintf(&b, "%s Section %d %s\n\n", strings.Repeat("#", level), sec, vocab[r.IntN(len(vocab))])
		for range 1 + r.IntN(6) {
			switch r.IntN(6) {
			case 0:
				for range 2 + r.IntN(8) {
					b.WriteString("- " + sentence() + "\n")
				}
			case 1:
				b.WriteString("```sh\n")
				for range 2 + r.IntN(10) {
					fmt.Fprintf(&b, "concierge %s --%s=%d\n", vocab[r.IntN(len(vocab))], vocab[r.IntN(len(vocab))], r.IntN(1000))
				}
				b.WriteString("```\n")
			case 2:
				b.WriteString("| Field | Value |\n|---|---|\n")
				for range 2 + r.IntN(12) {
					fmt.Fprintf(&b, "| %s | %s |\n", vocab[r.IntN(len(vocab))], sentence())
				}
			default:
				for range 1 + r.IntN(12) {
					b.WriteString(sentence() + " ")
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestChunkLargeDocument(t *testing.T) {
	c := newChunker(t, ChunkerOptions{})
	doc := domain.Document{Text: largeMarkdown(1 << 20)}
	start := time.Now()
	chunks := c.Chunk(doc)
	elapsed := time.Since(start)
	checkChunks(t, c, doc, chunks)
	// About a second here without the race detector; the bound leaves room
	// for -race and a loaded machine while catching quadratic behaviour.
	if elapsed > 30*time.Second {
		t.Errorf("chunking 1 MB took %s", elapsed)
	}
	t.Logf("1 MB: %d chunks in %s", len(chunks), elapsed)
}

func BenchmarkChunk(b *testing.B) {
	c := newChunker(b, ChunkerOptions{})
	doc := domain.Document{Text: largeMarkdown(1 << 20)}
	b.SetBytes(int64(len(doc.Text)))
	for b.Loop() {
		if len(c.Chunk(doc)) == 0 {
			b.Fatal("no chunks")
		}
	}
}
