package synonyms

import (
	"slices"
	"testing"
)

func TestOf(t *testing.T) {
	table, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if table.Len() < 30_000 {
		t.Fatalf("only %d words", table.Len())
	}
	tests := []struct {
		word, want string
	}{
		{"refund", "repay"},
		{"refunds", "repay"},
		{"cost", "price"},
		{"deleting", "erase"},
		{"remove", "withdraw"},
	}
	for _, tt := range tests {
		if got := table.Of(tt.word); !slices.Contains(got, tt.want) {
			t.Errorf("Of(%q) = %v, want it to hold %q", tt.word, got, tt.want)
		}
	}
	for _, w := range []string{"", "zzzz", "the"} {
		if got := table.Of(w); got != nil {
			t.Errorf("Of(%q) = %v, want none", w, got)
		}
	}
	var none *Table
	if none.Of("refund") != nil {
		t.Error("a nil table has synonyms")
	}
}

// TestSupportGroups: the support groups' words come first, WordNet's
// synonyms of the same word are kept after them, and a group word is not
// its own synonym.
func TestSupportGroups(t *testing.T) {
	table, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		word        string
		first, also string
	}{
		{"delivery", "ship", "bringing"}, // WordNet does not link delivery and shipping
		{"shipping", "ship", "transportation"},
		{"laptop", "computer", ""},
		{"deliveries", "ship", ""}, // an inflection finds the group of its base
	}
	for _, tt := range tests {
		got := table.Of(tt.word)
		if len(got) == 0 || got[0] != tt.first {
			t.Errorf("Of(%q) = %v, want it to start with %q", tt.word, got, tt.first)
		}
		if tt.also != "" && !slices.Contains(got, tt.also) {
			t.Errorf("Of(%q) = %v, lost WordNet's %q", tt.word, got, tt.also)
		}
		if slices.Contains(got, tt.word) {
			t.Errorf("Of(%q) = %v holds the word itself", tt.word, got)
		}
	}
	var fresh Table
	fresh.words = map[string][]string{"a": {"b"}}
	fresh.addGroups([]string{"a c", "a d"})
	if got := fresh.Of("a"); !slices.Equal(got, []string{"d", "c", "b"}) {
		t.Errorf("two groups of one word: Of(a) = %v, want [d c b]", got)
	}
}

func TestKnows(t *testing.T) {
	table, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		word string
		want bool
	}{
		{"theme", true},
		{"themes", true},
		{"chart", true},  // no synonyms, a word all the same
		{"forgot", true}, // an irregular form
		{"paris", true},
		{"refunded", true},
		{"sharing", true},
		{"hoped", true},
		{"ships", true},
		{"companies", true}, // "-ies" from "-y"
		{"copied", true},
		{"shipped", true},
		// Misspellings: "insted" is "inst" + "ed", and "inst" (an
		// abbreviation of "instant") is too short a base to count.
		{"insted", false},
		{"anyting", false},
		{"somthing", false},
		{"updte", false},
		{"gmail", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := table.Knows(tt.word); got != tt.want {
			t.Errorf("Knows(%q) = %v, want %v", tt.word, got, tt.want)
		}
	}
	var none *Table
	if none.Knows("theme") {
		t.Error("a nil table knows a word")
	}
}
