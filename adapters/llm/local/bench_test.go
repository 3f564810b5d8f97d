package local

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func BenchmarkComplete(b *testing.B) {
	eight := append(allChunks(), injectionChunk)[:8]
	thousand := make([]domain.Chunk, 0, 1000)
	for i := 0; len(thousand) < 1000; i++ {
		for _, c := range allChunks() {
			c.ID = fmt.Sprintf("%s_%d", c.ID, i)
			c.Text = fmt.Sprintf("Section %d. %s", i, c.Text)
			thousand = append(thousand, c)
		}
	}
	thousand = thousand[:1000]
	benches := []struct {
		name      string
		question  string
		knowledge []domain.Chunk
	}{
		{"8chunks/extract", "How long does shipping take and do you ship to Canada?", eight},
		{"8chunks/qa", "How do I reset my password?", eight},
		{"8chunks/none", "What is the capital of France?", eight},
		{"1000chunks/extract", "How long does shipping take and do you ship to Canada?", thousand},
	}
	m := New(Options{})
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			req := ask(bb.question, bb.knowledge...)
			var n int
			onDelta := func(d string) error { n += len(d); return nil }
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Complete(context.Background(), req, onDelta); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzComplete checks that any text and question keep the contracts: no
// panic, deltas concatenate to Content, Content within its cap and made of
// knowledge, citations only of given chunks.
func FuzzComplete(f *testing.F) {
	f.Add("How long does shipping take?", shippingChunk.Text, "")
	f.Add("reset password", "# Title\n\n1. One.\n2) Two?\n- three: four\n> quote e.g. this. Mr. X.", "How do I reset my password?")
	f.Add("a.b? c", "...!?\n\n\n.  .  . e.g. ’s ’ '", "?")
	f.Add("ÉTÉ café", "Été: café à 3€. Ça va? Oui!", "café")
	m := New(Options{MaxAnswerChars: 200})
	f.Fuzz(func(t *testing.T, question, text, qaQuestion string) {
		req := ask(question,
			domain.Chunk{ID: "a", Text: text, DocumentName: "doc"},
			domain.Chunk{ID: "b", Text: text, Question: qaQuestion},
		)
		var sb strings.Builder
		comp, err := m.Complete(context.Background(), req, func(d string) error {
			if d == "" {
				t.Fatal("empty delta")
			}
			sb.WriteString(d)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if sb.String() != comp.Content {
			t.Fatalf("deltas %q != content %q", sb.String(), comp.Content)
		}
		if utf8.ValidString(text) && utf8.ValidString(qaQuestion) && !utf8.ValidString(comp.Content) {
			t.Fatalf("invalid UTF-8 out of valid input: %q", comp.Content)
		}
		for _, id := range comp.Cited {
			if id != "a" && id != "b" {
				t.Fatalf("cited unknown %q", id)
			}
		}
		if comp.Cited != nil && comp.Cited[0] == "a" && len(comp.Content) > 200 {
			t.Fatalf("extracted answer of %d bytes", len(comp.Content))
		}
		_ = ports.Completion{}
	})
}
