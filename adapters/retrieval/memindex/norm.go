package memindex

// KeywordCeiling is the highest BM25F score any document could reach for
// query: every distinct query term at saturation. Dividing a Keyword score
// by it gives a relevance in [0, 1) that compares across queries, which
// raw BM25 does not. Terms the index has never seen count with the rarest
// idf, so a query whose telling word is absent from the knowledge base
// scores low. Returns 0 for a query without terms (stopwords only).
func (ix *Index) KeywordCeiling(query string) float64 {
	var ceiling float64
	seen := map[string]bool{}
	forEachWord(query, nil, func(w []byte) {
		t := termOf(string(w))
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		df := 0
		if id, ok := ix.findStem(t); ok {
			df = int(ix.df[id])
		}
		ceiling += ix.IDF(df) * (float64(ix.k1) + 1)
	})
	return ceiling
}
