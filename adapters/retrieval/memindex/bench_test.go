package memindex

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

var benchSizes = []int{1_000, 10_000, 100_000}

// benchLatency runs op b.N times over the fixture's queries and reports the
// 99th percentile of single operations next to the mean ns/op.
func benchLatency(b *testing.B, op func(f *fixture, i int)) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			f := sharedFixture(n)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				op(f, i%len(f.queries))
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

func BenchmarkKeyword(b *testing.B) {
	benchLatency(b, func(f *fixture, i int) { f.ix.Keyword(f.queries[i], 50) })
}

// BenchmarkKeywordCommon is the worst case: the five commonest content
// words of the corpus, whose postings reach a large share of the documents.
func BenchmarkKeywordCommon(b *testing.B) {
	benchLatency(b, func(f *fixture, i int) { f.ix.Keyword(f.common, 50) })
}

func BenchmarkVector(b *testing.B) {
	benchLatency(b, func(f *fixture, i int) { f.ix.Vector(f.vectors[i], 50) })
}

// BenchmarkVectorSparse is Vector with queries as sparse as the embedded
// hashing embedder's (about one dimension in eight nonzero).
func BenchmarkVectorSparse(b *testing.B) {
	var once sync.Once
	var sparse [][]float32
	benchLatency(b, func(f *fixture, i int) {
		once.Do(func() {
			for _, q := range f.vectors {
				sparse = append(sparse, sparsify(slices.Clone(q), 8))
			}
		})
		f.ix.Vector(sparse[i], 50)
	})
}

// BenchmarkHybrid is one retrieval as the retriever does it: both legs for
// 50 candidates each, fused to 10.
func BenchmarkHybrid(b *testing.B) {
	benchLatency(b, func(f *fixture, i int) {
		Fuse(10, DefaultRRFK, f.ix.Keyword(f.queries[i], 50), f.ix.Vector(f.vectors[i], 50))
	})
}

func BenchmarkBuild(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			f := sharedFixture(n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := Build(f.docs, benchDims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
