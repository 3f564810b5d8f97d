package retrieval

import (
	"strings"
	"sync"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

func TestChunkTextsRoundTrip(t *testing.T) {
	texts := []string{"", "a", "Refunds take five days.", "Ünïcödé — 日本語 ✓", strings.Repeat("shipping policy ", 500)}
	a := newAgentChunks(len(texts))
	for i, text := range texts {
		a.add(domain.Chunk{ID: string(rune('a' + i)), Text: text})
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
	if long := len(a.texts[len(texts)-1]); long*4 > len(texts[len(texts)-1]) {
		t.Errorf("a repetitive text deflated to %d bytes of %d", long, len(texts[len(texts)-1]))
	}
	if a.Bytes() <= 0 {
		t.Error("no bytes charged")
	}
}
