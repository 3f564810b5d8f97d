package memindex

import "testing"

func TestOneEdit(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"password", "pasword", true},    // deletion
		{"pasword", "password", true},    // insertion
		{"payment", "paymnet", true},     // neighbours swapped
		{"paymnet", "paymetn", false},    // two swaps
		{"container", "conatiner", true}, // neighbours swapped
		{"install", "instal", true},
		{"delivery", "delivary", true}, // substitution
		{"same", "same", false},
		{"abc", "abcde", false},
		{"canada", "panama", false},
		{"", "a", true},
	}
	for _, tt := range tests {
		if got := oneEdit(tt.a, tt.b); got != tt.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestQueryWordsMatchTyposOfLongWordsOnly(t *testing.T) {
	ix, err := Build([]Doc{{Text: "Your password must be long. Open the chat from the menu."}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]QueryWord{}
	for _, w := range ix.QueryWords("pasword chart canada the") {
		got[w.Word] = w
	}
	if w := got["pasword"]; !w.Typo || w.Term == NoTerm || w.DF != 1 {
		t.Errorf("pasword = %+v, want a typo of password", w)
	}
	if w := got["chart"]; w.Typo || w.Term != NoTerm {
		t.Errorf("chart = %+v, want no term (too short for a typo)", w)
	}
	if w := got["canada"]; w.Term != NoTerm {
		t.Errorf("canada = %+v", w)
	}
	if _, ok := got["the"]; ok {
		t.Errorf("a stopword is a query word")
	}
}

// A document's name joins the vocabulary without adding terms or changing
// any score: its words the texts use find their terms, the others (and
// stopwords) find none, exactly as before, without the stemmer.
func TestNamesJoinTheVocabularyOnly(t *testing.T) {
	docs := []Doc{
		{Title: "Refunds", Text: "Refunds take five days. Returns are free."},
		{Text: "Express delivery costs 9.50 GBP."},
	}
	plain, err := Build(docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	docs[0].Name, docs[1].Name = "Refund guide", "shipping-guide.md"
	named, err := Build(docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if named.Terms() != plain.Terms() {
		t.Errorf("names added terms: %d, want %d", named.Terms(), plain.Terms())
	}
	for _, w := range []string{"refund", "refunding", "guide", "shipping", "md", "the", "are", "express", "expres"} {
		if got, want := named.Term(w), plain.Term(w); got != want {
			t.Errorf("Term(%q) = %d with names, %d without", w, got, want)
		}
	}
	if named.Term("guide") != NoTerm || named.Term("refund") == NoTerm {
		t.Errorf("guide = %d, refund = %d: want no term and a term", named.Term("guide"), named.Term("refund"))
	}
	for _, q := range []string{"refund guide", "express delivery", "the shipping guide md"} {
		a, b := plain.Keyword(q, 5), named.Keyword(q, 5)
		if len(a) != len(b) {
			t.Fatalf("%q: %d hits with names, %d without", q, len(b), len(a))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%q: hit %d = %+v with names, %+v without", q, i, b[i], a[i])
			}
		}
	}
	var terms []int32
	named.EachTerm("the guide to refunds", nil, func(_ int, t int32, _ bool) { terms = append(terms, t) })
	if len(terms) != 4 || terms[0] != NoTerm || terms[1] != NoTerm || terms[2] != NoTerm || terms[3] == NoTerm {
		t.Errorf("EachTerm(the guide to refunds) = %v, want three without a term, then refund's", terms)
	}
}
