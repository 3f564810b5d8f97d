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
