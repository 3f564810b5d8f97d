package retrieval

import (
	"bytes"
	"compress/flate"
	"io"
	"sync"

	"github.com/conciergehq/concierge/core/domain"
)

// agentChunks is a cached index's chunks, by document position. The texts,
// most of an index's memory, are kept deflated: about half the size, and a
// query inflates only the few chunks it returns (tens of microseconds).
type agentChunks struct {
	chunks []domain.Chunk // Text empty; see texts
	texts  [][]byte       // deflated Text of chunks[i]
	bytes  int64
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

// chunk returns chunk i with its text.
func (a *agentChunks) chunk(i int) domain.Chunk {
	c := a.chunks[i]
	c.Text = inflate(a.texts[i])
	return c
}

// meta returns chunk i without its text, for traces.
func (a *agentChunks) meta(i int) domain.Chunk { return a.chunks[i] }

func newAgentChunks(n int) *agentChunks {
	return &agentChunks{chunks: make([]domain.Chunk, 0, n), texts: make([][]byte, 0, n)}
}

// add appends a chunk, deflating its text.
func (a *agentChunks) add(c domain.Chunk) {
	text := deflate(c.Text)
	c.Text = ""
	a.chunks = append(a.chunks, c)
	a.texts = append(a.texts, text)
	// Strings and slice headers plus the struct itself.
	a.bytes += int64(len(c.ID)+len(c.SourceID)+len(c.DocumentName)+len(c.URL)+len(c.Question)+len(text)) + 184
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
