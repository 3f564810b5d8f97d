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
