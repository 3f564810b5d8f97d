package retrieval_test

import (
	"slices"
	"testing"

	"github.com/conciergehq/concierge/adapters/retrieval"
	"github.com/conciergehq/concierge/adapters/retrieval/memindex"
	"github.com/conciergehq/concierge/core/domain"
)

func TestBuildAssociations(t *testing.T) {
	// Two passages titled "Password" use "email" and "link" in their
	// bodies; the other passages do not. "delivery" is used everywhere, so
	// it is no association of anything.
	texts := []string{
		"Password\nWe send a link to your email. The delivery of the email takes a minute.",
		"Password reset\nOpen the link in the email we sent; delivery can be slow.",
		"Shipping\nStandard delivery takes 3 days.",
		"Returns\nReturn an item within 30 days of delivery.",
		"Invoices\nInvoices list every delivery.",
		"Warranty\nThe warranty covers delivery damage.",
		"Gift cards\nGift cards never expire; delivery is instant.",
		"Stores\nOur stores take card payments; delivery from stores is free.",
	}
	docs := make([]memindex.Doc, len(texts))
	chunks := make([]domain.Chunk, len(texts))
	for i, text := range texts {
		docs[i] = memindex.Doc{Text: text, Vector: []float32{1}}
		chunks[i] = domain.Chunk{Text: text}
	}
	ix, err := memindex.Build(docs, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := retrieval.BuildAssociations(ix, chunks)
	tests := []struct {
		title string
		want  []string // terms among the associations
		not   []string // terms that must not be
	}{
		{"password", []string{"email", "link"}, []string{"delivery", "password"}},
		{"shipping", nil, []string{"delivery"}}, // seen once: below minCooccur
	}
	for _, tt := range tests {
		got := a.Of(ix.Term(tt.title))
		for _, w := range tt.want {
			if !slices.Contains(got, ix.Term(w)) {
				t.Errorf("%s: %q not associated (%v)", tt.title, w, got)
			}
		}
		for _, w := range tt.not {
			if slices.Contains(got, ix.Term(w)) {
				t.Errorf("%s: %q associated", tt.title, w)
			}
		}
	}
	if a.Len() == 0 || a.Bytes() <= 0 {
		t.Errorf("Len %d, Bytes %d: want a non-empty table", a.Len(), a.Bytes())
	}
	var none *retrieval.Associations
	if none.Of(1) != nil || none.Len() != 0 || none.Bytes() != 0 {
		t.Error("a nil table must hold nothing")
	}
	if e := retrieval.BuildAssociations(ix, nil); e.Len() != 0 {
		t.Errorf("no chunks: %d associations", e.Len())
	}
}
