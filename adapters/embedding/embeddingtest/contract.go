// Package embeddingtest holds the contract every ports.Embedder must meet,
// run by each implementation's tests against its own instance.
package embeddingtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/conciergehq/concierge/ports"
)

// normTolerance allows for float32 rounding in a unit vector's length.
const normTolerance = 1e-4

// sameTolerance allows a vector computed in a different batch to differ in
// the last bits (providers batch on the GPU); equal vectors of a
// deterministic embedder differ by nothing.
const sameTolerance = 1e-5

// Contract checks e against the ports.Embedder contract: an id and a size;
// one unit vector of Dimensions() per text, in order; the same text giving
// the same vector, within a batch, across batches and one by one; a text with
// nothing to embed giving a zero vector; an empty batch giving no vectors; a
// cancelled context giving an error. e must embed at least a few hundred short
// texts quickly.
func Contract(t *testing.T, e ports.Embedder) {
	t.Helper()
	ctx := context.Background()
	dims := e.Dimensions()
	if e.ID() == "" || dims <= 0 {
		t.Fatalf("ID %q, Dimensions %d: want a non-empty id and a positive size", e.ID(), dims)
	}

	texts := []string{
		"How do I reset my password?",
		"Refunds are issued to the original payment method within 5 business days.",
		"Our support team is available Monday to Friday, 9am to 5pm CET.",
		"How do I reset my password?",
		"Export your invoices as PDF from the Billing page.",
		"Résumé uploads accept PDF and DOCX files up to 10 MB.",
	}

	t.Run("one unit vector per text, in order", func(t *testing.T) {
		vecs := embed(t, e, texts)
		for i, v := range vecs {
			if n := norm(v); math.Abs(n-1) > normTolerance {
				t.Errorf("vector %d has norm %v, want 1", i, n)
			}
		}
		if !same(vecs[0], vecs[3]) {
			t.Error("the same text twice in a batch gave different vectors")
		}
		for i := range vecs {
			for j := i + 1; j < len(vecs); j++ {
				if texts[i] != texts[j] && same(vecs[i], vecs[j]) {
					t.Errorf("texts %d and %d differ but their vectors do not", i, j)
				}
			}
		}
		reversed := make([]string, len(texts))
		for i, s := range texts {
			reversed[len(texts)-1-i] = s
		}
		back := embed(t, e, reversed)
		for i := range texts {
			if !same(vecs[i], back[len(texts)-1-i]) {
				t.Errorf("text %d: its vector changed when the batch was reversed", i)
			}
		}
	})

	t.Run("batch equals one by one", func(t *testing.T) {
		vecs := embed(t, e, texts)
		for i, s := range texts {
			one := embed(t, e, []string{s})
			if !same(vecs[i], one[0]) {
				t.Errorf("text %d: batch and single vectors differ", i)
			}
		}
	})

	t.Run("large batch keeps order", func(t *testing.T) {
		many := make([]string, 250)
		for i := range many {
			many[i] = fmt.Sprintf("Article %d: how to configure widget %d for team %d.", i, i*7, i%13)
		}
		vecs := embed(t, e, many)
		for _, i := range []int{0, 1, 95, 96, 97, 191, 192, 249} {
			one := embed(t, e, many[i:i+1])
			if !same(vecs[i], one[0]) {
				t.Errorf("text %d of a large batch: vector differs from its own", i)
			}
		}
	})

	t.Run("nothing to embed gives a zero vector", func(t *testing.T) {
		vecs := embed(t, e, []string{"", "   \n\t", texts[0]})
		for i := range 2 {
			if n := norm(vecs[i]); n != 0 {
				t.Errorf("text %d (blank): norm %v, want a zero vector", i, n)
			}
		}
		if n := norm(vecs[2]); math.Abs(n-1) > normTolerance {
			t.Errorf("a real text next to blank ones has norm %v", n)
		}
	})

	t.Run("empty batch", func(t *testing.T) {
		for _, in := range [][]string{nil, {}} {
			vecs, err := e.Embed(ctx, in)
			if err != nil || len(vecs) != 0 {
				t.Errorf("Embed(%v) = %d vectors, %v; want none and no error", in, len(vecs), err)
			}
		}
	})

	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.Embed(cctx, texts); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func embed(t *testing.T, e ports.Embedder, texts []string) [][]float32 {
	t.Helper()
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatalf("Embed(%d texts): %v", len(texts), err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("Embed(%d texts) gave %d vectors", len(texts), len(vecs))
	}
	for i, v := range vecs {
		if len(v) != e.Dimensions() {
			t.Fatalf("vector %d has %d dimensions, want %d", i, len(v), e.Dimensions())
		}
		for j, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("vector %d[%d] = %v", i, j, x)
			}
		}
	}
	return vecs
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i])-float64(b[i])) > sameTolerance {
			return false
		}
	}
	return true
}
