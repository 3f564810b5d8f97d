package memindex

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// bruteForce ranks every document with a vector by the same dot product,
// sorting all of them: the reference for the heap and the parallel split.
func bruteForce(docs []Doc, q []float32) []Hit {
	norm := norm2(q)
	var all []Hit
	for i, d := range docs {
		if d.Vector == nil {
			continue
		}
		unit := make([]float32, len(d.Vector))
		n := norm2(d.Vector)
		if n == 0 {
			continue
		}
		copy(unit, d.Vector)
		if math.Abs(n-1) > 1e-6 {
			for j := range unit {
				unit[j] = float32(float64(unit[j]) / n)
			}
		}
		all = append(all, Hit{Doc: i, Score: float64(dot(q, unit))})
	}
	slices.SortStableFunc(all, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	for i := range all {
		all[i].Score /= norm
	}
	return all
}

func TestVectorMatchesBruteForce(t *testing.T) {
	tests := []struct {
		name       string
		n, dims    int
		withoutVec int // every withoutVec-th document has no vector; 0 for none
		ks         []int
	}{
		{"small, all vectors", 300, 16, 0, []int{1, 5, 50, 300, 1000}},
		{"small, some without", 300, 13, 4, []int{1, 10, 400}},
		{"parallel path", parallelWork/64 + 301, 64, 0, []int{1, 10, 100}},
		{"parallel path, some without", parallelWork/40*3/2 + 7, 40, 3, []int{1, 7, 64}},
		{"parallel path, four parts", parallelWork/64*3 + 1, 64, 0, []int{1, 10, 1000}},
	}
	// Exercise the split on any machine, into up to four parts.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tt.n), uint64(tt.dims)))
			c := &corpus{rng: rng}
			docs := make([]Doc, tt.n)
			for i := range docs {
				if tt.withoutVec == 0 || i%tt.withoutVec != 0 {
					docs[i].Vector = c.vector(tt.dims)
				}
			}
			// Duplicate vectors make exact ties, which go to the first.
			docs[tt.n-1].Vector = docs[1].Vector
			ix := mustBuild(t, docs, tt.dims)
			if (ix.cols != nil) != (ix.Vectors() <= columnRows) {
				t.Fatalf("%d rows, columns kept: %v", ix.Vectors(), ix.cols != nil)
			}
			queries := [][]float32{c.vector(tt.dims), docs[tt.n-1].Vector}
			// An unnormalised query gives the same cosines.
			queries = append(queries, slices.Clone(queries[0]))
			for j := range queries[2] {
				queries[2][j] *= 3.5
			}
			// A sparse query (as the hashing embedder's are) takes the
			// sparse path and must rank exactly like the dense one.
			queries = append(queries, sparsify(c.vector(tt.dims), 8))
			if sparseOf(queries[len(queries)-1]) == nil || sparseOf(queries[0]) != nil {
				t.Fatal("the sparse query must take the sparse path and the dense ones the dense path")
			}
			for qi, q := range queries {
				all := bruteForce(docs, q)
				for _, k := range tt.ks {
					got, want := ix.Vector(q, k), all[:min(k, len(all))]
					if len(got) != len(want) {
						t.Fatalf("query %d k=%d: %d hits, want %d", qi, k, len(got), len(want))
					}
					for i := range got {
						if got[i].Doc != want[i].Doc || math.Abs(got[i].Score-want[i].Score) > 1e-6 {
							t.Fatalf("query %d k=%d: hit %d = %+v, want %+v", qi, k, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
}

// sparsify keeps every keep-th entry of v (and at least one), zeroing the rest.
func sparsify(v []float32, keep int) []float32 {
	for i := range v {
		if i%keep != 1 && len(v) > 1 {
			v[i] = 0
		}
	}
	return v
}

func TestVectorEdgeCases(t *testing.T) {
	docs := []Doc{
		{Vector: []float32{3, 4}}, // not unit: Build normalises
		{Vector: nil},
		{Vector: []float32{0, 0}}, // zero: counts as none
		{Vector: []float32{0, -1}},
	}
	ix := mustBuild(t, docs, 2)
	if ix.Vectors() != 2 {
		t.Fatalf("Vectors() = %d, want 2", ix.Vectors())
	}
	tests := []struct {
		name string
		q    []float32
		k    int
		want []Hit
	}{
		{"same direction scores 1", []float32{0.6, 0.8}, 10, []Hit{{0, 1}, {3, -0.8}}},
		{"opposite direction ranks last", []float32{0, 2}, 10, []Hit{{0, 0.8}, {3, -1}}},
		{"k=1", []float32{0, -1}, 1, []Hit{{3, 1}}},
		{"k=0", []float32{0, -1}, 0, nil},
		{"zero query", []float32{0, 0}, 10, nil},
		{"wrong dimensions", []float32{1, 0, 0}, 10, nil},
		{"NaN query", []float32{float32(math.NaN()), 1}, 10, nil},
		{"infinite query", []float32{float32(math.Inf(1)), 1}, 10, nil},
		{"nil query", nil, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ix.Vector(tt.q, tt.k)
			if len(got) != len(tt.want) {
				t.Fatalf("Vector = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].Doc != tt.want[i].Doc || math.Abs(got[i].Score-tt.want[i].Score) > 1e-6 {
					t.Fatalf("Vector = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestVectorWithoutVectors(t *testing.T) {
	ix := mustBuild(t, docsOf("a b c"), 4)
	if got := ix.Vector([]float32{1, 0, 0, 0}, 3); got != nil {
		t.Fatalf("Vector on an index without vectors = %v, want nil", got)
	}
	ix = mustBuild(t, nil, 0)
	if got := ix.Vector(nil, 3); got != nil || ix.Len() != 0 {
		t.Fatalf("empty index: Vector = %v, Len = %d", got, ix.Len())
	}
}

func TestBuildCopiesVectors(t *testing.T) {
	v := []float32{1, 0}
	ix := mustBuild(t, []Doc{{Vector: v}, {Vector: []float32{0, 1}}}, 2)
	v[0], v[1] = 0, 1 // the caller reuses its slice
	got := ix.Vector([]float32{1, 0}, 1)
	if len(got) != 1 || got[0].Doc != 0 || got[0].Score != 1 {
		t.Fatalf("after the caller changed its vector: %v, want doc 0 at 1", got)
	}
}

func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 40 {
		a, b := make([]float32, n), make([]float32, n+3) // b may be longer
		var want float64
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			want += float64(a[i]) * float64(b[i])
		}
		if got := float64(dot(a, b)); math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Errorf("dot of %d: %v, want %v", n, got, want)
		}
	}
}
