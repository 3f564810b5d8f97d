package retrieval

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

func TestChunkTextsRoundTrip(t *testing.T) {
	for _, size := range []int{5, plainChunks + 1} {
		t.Run(fmt.Sprint(size, " chunks"), func(t *testing.T) { checkChunkTexts(t, size) })
	}
}

// checkChunkTexts stores five texts in the chunks of an index of size
// chunks: kept as they are in a small one, deflated in a large one.
func checkChunkTexts(t *testing.T, size int) {
	texts := []string{"", "a", "Refunds take five days.", "Ünïcödé — 日本語 ✓", strings.Repeat("shipping policy ", 500)}
	a := newAgentChunks(size)
	for i, text := range texts {
		a.add(domain.Chunk{ID: string(rune('a' + i)), Text: text})
	}
	if a.deflated != (size > plainChunks) {
		t.Fatalf("an index of %d chunks deflated: %v", size, a.deflated)
	}
	// Concurrent readers share the pooled inflaters.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i, want := range texts {
				if got := a.chunk(i); got.Text != want || got.ID != string(rune('a'+i)) {
					t.Errorf("chunk %d = %q, want %q", i, got.Text, want)
				}
				if a.meta(i).Text != "" {
					t.Errorf("meta carries the text")
				}
			}
		})
	}
	wg.Wait()
	if !a.deflated {
		if a.Bytes() < int64(len(texts[len(texts)-1])) {
			t.Errorf("plain texts charged %d bytes", a.Bytes())
		}
		return
	}
	if long := len(a.texts[len(texts)-1]); long*4 > len(texts[len(texts)-1]) {
		t.Errorf("a repetitive text deflated to %d bytes of %d", long, len(texts[len(texts)-1]))
	}
	if a.Bytes() <= 0 {
		t.Error("no bytes charged")
	}
}
