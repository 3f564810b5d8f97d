package local

import (
	"reflect"
	"testing"
)

func TestStem(t *testing.T) {
	groups := [][]string{
		{"return", "returns", "returned", "returning"},
		{"ship", "ships", "shipped", "shipping"},
		{"policy", "policies"},
		{"charge", "charges", "charged", "charging"},
		{"make", "making", "makes"},
		{"apply", "applies", "applied", "applying"},
		{"address", "addresses"},
		{"process", "processing", "processed"},
		{"bill", "billing", "billed"},
		{"box", "boxes"},
		{"use", "uses", "using", "used"},
		{"fee", "fees"},
		{"pay", "paying", "payment", "payments"},
		{"cancel", "cancels", "cancelled"},
		{"setting", "settings"},
	}
	for _, g := range groups {
		want := stemString(g[0])
		for _, w := range g[1:] {
			if got := stemString(w); got != want {
				t.Errorf("stem(%q) = %q, want %q like stem(%q)", w, got, want, g[0])
			}
		}
	}
	// Words that must stay apart or intact.
	for w, want := range map[string]string{
		"status": "status", "need": "need", "sing": "sing", "string": "string",
		"gas": "gas", "2024": "2024", "café": "café",
	} {
		if got := stemString(w); got != want {
			t.Errorf("stem(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestNextWord(t *testing.T) {
	text := "Don't ship   Customer's order-ID 42, São Paulo’s café!"
	var words []string
	buf := make([]byte, 0, 16)
	for i := 0; ; {
		w, _, end, ok := nextWord(text, i, buf)
		if !ok {
			break
		}
		buf, i = w, end
		words = append(words, string(w))
	}
	want := []string{"dont", "ship", "customers", "order", "id", "42", "são", "paulos", "café"}
	if !reflect.DeepEqual(words, want) {
		t.Fatalf("words = %q, want %q", words, want)
	}
}

func TestSplitSentences(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"plain", "One thing. Two things! Three things? Four", []string{"One thing.", "Two things!", "Three things?", "Four"}},
		{"abbreviations", "Use a card, e.g. Visa or Mastercard. Dr. Smith approves refunds. We open at 9 a.m. every day.",
			[]string{"Use a card, e.g. Visa or Mastercard.", "Dr. Smith approves refunds.", "We open at 9 a.m. every day."}},
		{"decimals and urls", "It costs 3.50 USD. Visit acme.com/help for more.", []string{"It costs 3.50 USD.", "Visit acme.com/help for more."}},
		{"hard wrapped", "Orders ship within two\nbusiness days of payment. Tracking follows.", []string{"Orders ship within two\nbusiness days of payment.", "Tracking follows."}},
		{"markdown", "# Shipping\n\n- Standard: 3-5 days\n- Express: 1 day\n1. Open settings.\n2) Click save",
			[]string{"Shipping", "Standard: 3-5 days", "Express: 1 day", "Open settings.", "Click save"}},
		{"hard wrapped list item, a capital on the next line", "1. Install the driver, which lets you mount\n   WebDAV shares like any disk.\n2. Restart",
			[]string{"Install the driver, which lets you mount\n   WebDAV shares like any disk.", "Restart"}},
		{"an indented next item is no continuation", "- Open the menu and choose\n  - Settings\n  - Privacy",
			[]string{"Open the menu and choose", "Settings", "Privacy"}},
		{"an indented log line is no continuation", "Your log may show a line like this one from the network\n    11/1/2017 [WARN] Failed",
			[]string{"Your log may show a line like this one from the network", "11/1/2017 [WARN] Failed"}},
		{"a block quote's wrapped line", "> The install prints an error. You\n> can ignore it.",
			[]string{"The install prints an error.", "You\n> can ignore it."}},
		{"a block quote wrapped twice", "> The install prints\n> an error that you\n> can ignore.",
			[]string{"The install prints\n> an error that you\n> can ignore."}},
		{"quoted program output is no prose", "> debug1: connect to the host timed out\n> ssh: connect to host failed",
			[]string{"debug1: connect to the host timed out", "ssh: connect to host failed"}},
		{"a title then an unindented sentence", "Shipping policy\nWe ship worldwide.", []string{"Shipping policy", "We ship worldwide."}},
		{"quotes", `He said "no." Then left.`, []string{`He said "no."`, "Then left."}},
		{"ellipsis", "Wait... Then go.", []string{"Wait...", "Then go."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, sp := range splitSentences(tt.text, nil) {
				got = append(got, tt.text[sp.start:sp.end])
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSplitSentencesKinds(t *testing.T) {
	text := "## Returns\nReturn policy\nHow do I return an item? Send it back within 30 days.\nNote:\n- Keep the label."
	spans := splitSentences(text, nil)
	type kind struct {
		text                     string
		heading, title, question bool
	}
	var got []kind
	for _, sp := range spans {
		got = append(got, kind{text[sp.start:sp.end], sp.heading, sp.title, sp.question})
	}
	want := []kind{
		{"Returns", true, false, false},
		{"Return policy", false, true, false},
		{"How do I return an item?", false, false, true},
		{"Send it back within 30 days.", false, false, false},
		{"Note:", true, false, false},
		{"Keep the label.", false, false, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestTruncateWords(t *testing.T) {
	if got := truncateWords("short", 10); got != "short" {
		t.Fatalf("got %q", got)
	}
	got := truncateWords("one two three four five", 14)
	if got != "one two…" {
		t.Fatalf("got %q", got)
	}
	if len(got) > 14 {
		t.Fatalf("len %d > 14", len(got))
	}
}

func TestHeadingPathLine(t *testing.T) {
	tests := []struct {
		text    string
		heading []bool
	}{
		{"Billing > Invoices > VAT number\nAdd it under Billing settings.", []bool{true, false}},
		// Only the first line of a chunk is its path; later lines with ">"
		// are content.
		{"Open the menu.\nSettings > General > Resources is where memory is set", []bool{false, false}},
		{"Select Settings > General.", []bool{false}},
	}
	for _, tt := range tests {
		var got []bool
		for _, sp := range splitSentences(tt.text, nil) {
			got = append(got, sp.heading)
		}
		if !reflect.DeepEqual(got, tt.heading) {
			t.Errorf("%q: headings %v, want %v", tt.text, got, tt.heading)
		}
	}
}

func TestCleanSentence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Orders ship  within two\nbusiness days", "Orders ship within two business days."},
		{"You\n> can ignore it.", "You can ignore it."},
		{"Compare a > b", "Compare a > b."},
	}
	for _, tt := range tests {
		if got := cleanSentence(tt.in); got != tt.want {
			t.Errorf("cleanSentence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
