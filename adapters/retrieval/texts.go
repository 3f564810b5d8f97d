package retrieval

import (
	"bytes"
	"compress/flate"
	"io"
	"sync"

	"github.com/conciergehq/concierge/core/domain"
)

// agentChunks is a cached index's chunks, by document position. The texts
// of a large index, most of its memory, are kept deflated: about half the
// size, and a query inflates only the few chunks it returns (about 8 µs
// each). A small index keeps them as they are: it saves little memory, and
// every answer would pay to inflate its chunks.
type agentChunks struct {
	chunks []domain.Chunk // Text empty for a deflated index; see texts
	texts  [][]byte       // deflated Text of chunks[i], when deflated
	// deflated: the index holds more than plainChunks chunks.
	deflated bool
	bytes    int64
	// positions maps chunk ids to positions, built on first use (only the
	// PostgreSQL keyword leg needs it).
	positionsOnce sync.Once
	positions     map[string]int
}

// position returns the position of the chunk with the given id.
func (a *agentChunks) position(id string) (int, bool) {
	a.positionsOnce.Do(func() {
		a.positions = make(map[string]int, len(a.chunks))
		for i, c := range a.chunks {
			a.positions[c.ID] = i
		}
	})
	p, ok := a.positions[id]
	return p, ok
}

// Bytes lets the cache charge the chunks to its budget.
func (a *agentChunks) Bytes() int64 { return a.bytes }

// plainChunks is the largest index whose texts are kept as they are: at
// about 1.2 KB a chunk, deflating them would save 6 MB at most.
const plainChunks = 10_000

// chunk returns chunk i with its text.
func (a *agentChunks) chunk(i int) domain.Chunk {
	c := a.chunks[i]
	if a.deflated {
		c.Text = inflate(a.texts[i])
	}
	return c
}

// meta returns chunk i without its text, for traces.
func (a *agentChunks) meta(i int) domain.Chunk {
	c := a.chunks[i]
	c.Text = ""
	return c
}

// newAgentChunks returns the chunks of an index of n chunks.
func newAgentChunks(n int) *agentChunks {
	a := &agentChunks{chunks: make([]domain.Chunk, 0, n), deflated: n > plainChunks}
	if a.deflated {
		a.texts = make([][]byte, 0, n)
	}
	return a
}

// add appends a chunk, deflating its text in a large index.
func (a *agentChunks) add(c domain.Chunk) {
	size := len(c.Text)
	if a.deflated {
		text := deflate(c.Text)
		c.Text, size = "", len(text)
		a.texts = append(a.texts, text)
	}
	a.chunks = append(a.chunks, c)
	// Strings and slice headers plus the struct itself.
	a.bytes += int64(len(c.ID)+len(c.SourceID)+len(c.DocumentName)+len(c.URL)+len(c.Heading)+len(c.Question)+size) + 200
	for _, q := range c.Questions {
		a.bytes += int64(len(q)) + 16
	}
}

var writers = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(io.Discard, flate.BestSpeed)
	return w
}}

func deflate(s string) []byte {
	var buf bytes.Buffer
	w := writers.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = io.WriteString(w, s) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	writers.Put(w)
	return bytes.Clone(buf.Bytes())
}

// readers are reused: a new flate reader allocates its tables and window.
var readers = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

func inflate(b []byte) string {
	r := readers.Get().(io.ReadCloser)
	defer readers.Put(r)
	_ = r.(flate.Resetter).Reset(bytes.NewReader(b), nil) // Reset of a flate reader never fails
	out, err := io.ReadAll(r)
	if err != nil {
		// Only bytes deflate wrote are ever inflated.
		panic("retrieval: a deflated chunk text is corrupt: " + err.Error())
	}
	return string(out)
}
