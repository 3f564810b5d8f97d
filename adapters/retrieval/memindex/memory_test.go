package memindex

import (
	"runtime"
	"testing"
	"time"
)

// TestMemory100k builds the index of 100,000 synthetic chunks of about
// 1,200 bytes with 384-dimension vectors and checks the resident-size
// target: index plus texts under 300 MB, and Bytes() close to the real heap
// growth so the cache budget means something.
func TestMemory100k(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measurement: needs a normal build and a few seconds")
	}
	const n = 100_000
	docs := newCorpus(1, 30_000).docs(n, benchDims)
	var textBytes int64
	for i := range docs {
		textBytes += int64(len(docs[i].Title) + len(docs[i].Text))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	ix, err := Build(docs, benchDims)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	est := ix.Bytes()
	vec := int64(ix.Vectors() * ix.Dims() * 4)
	var postings int64
	for _, df := range ix.df {
		postings += int64(df)
	}
	const mb = 1 << 20
	t.Logf("build %d docs: %v, %.0f MiB allocated on the way", n, took.Round(time.Millisecond), float64(after.TotalAlloc-before.TotalAlloc)/mb)
	t.Logf("%d terms, %d surface words, %d postings in %.1f MiB (%.2f B each)",
		ix.Terms(), len(ix.words), postings, float64(len(ix.post))/mb, float64(len(ix.post))/float64(postings))
	t.Logf("Bytes() %.1f MiB (vectors %.1f, keyword %.1f); heap growth %.1f MiB; texts %.1f MiB (%d B/chunk); index+texts %.1f MiB",
		float64(est)/mb, float64(vec)/mb, float64(est-vec)/mb, float64(heap)/mb, float64(textBytes)/mb, textBytes/n, float64(heap+textBytes)/mb)

	if ratio := float64(heap) / float64(est); ratio < 0.9 || ratio > 1.1 {
		t.Errorf("heap growth %d is %.2f x Bytes() %d, want within 10%%", heap, ratio, est)
	}
	if total := max(heap, est) + textBytes; total >= 300*mb {
		t.Errorf("index + texts = %.1f MiB, want < 300 MB", float64(total)/mb)
	}
	if took > 10*time.Second {
		t.Errorf("build took %v, want a few seconds", took)
	}
	runtime.KeepAlive(docs)
	runtime.KeepAlive(ix)
}

// TestBytesEstimate checks Bytes() against the heap for the keyword part
// alone, which the vectors would hide in TestMemory100k.
func TestBytesEstimate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measurement: needs a normal build")
	}
	for _, n := range []int{2_000, 20_000} {
		docs := newCorpus(uint64(n), 30_000).docs(n, 0)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ix, err := Build(docs, 0)
		if err != nil {
			t.Fatal(err)
		}
		ix.Keyword("anything", 1) // allocate the scratch Bytes() counts
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		ratio := float64(heap) / float64(ix.Bytes())
		t.Logf("%d docs: Bytes() %d, heap growth %d (%.2f)", n, ix.Bytes(), heap, ratio)
		if ratio < 0.85 || ratio > 1.15 {
			t.Errorf("%d docs: heap growth is %.2f x Bytes(), want within 15%%", n, ratio)
		}
		runtime.KeepAlive(ix)
		runtime.KeepAlive(docs)
	}
}
