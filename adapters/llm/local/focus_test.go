package local

import (
	"reflect"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// The demo agent's knowledge (app/concierge/dev.go) and the two-source
// agent of issue 14.
var (
	demoShipping = domain.Chunk{ID: "chk_demo_shipping", DocumentName: "Shipping policy",
		Text: "Acme ships orders within 1 business day. Standard shipping takes 3 to 5 business days; express shipping takes 1 to 2 business days. " +
			"Shipping is free for orders over 50 euros. You receive a tracking link by email as soon as the parcel leaves our warehouse."}
	demoReturns = domain.Chunk{ID: "chk_demo_returns", DocumentName: "Returns and refunds",
		Text: "You can return any unused item within 30 days of delivery. Start a return from the Orders page of your account and print the prepaid label. " +
			"Refunds are issued to the original payment method within 5 business days of the return reaching us."}
	refundPolicy = domain.Chunk{ID: "chk_refund", DocumentName: "Refund policy",
		Text: "Refunds are issued within 14 days of receiving the returned item. Items must be unused and in their original packaging."}
	deliveryPrices = domain.Chunk{ID: "chk_delivery", DocumentName: "Shipping",
		Text: "Standard delivery takes 3-5 business days and costs 4.95 GBP. Express next-day delivery costs 9.50 GBP when ordered before 2pm."}
	saleReturns = domain.Chunk{ID: "chk_sale", DocumentName: "Sale",
		Text: "Sale items ship within 2 days. Returns are free for full-price items. Sale items can be returned within 14 days for store credit."}
	installGuide = domain.Chunk{ID: "chk_install", DocumentName: "Getting started",
		Text: "To install the desktop app, download the installer from our website and run it. You need an administrator account on Windows."}
	invoicePath = domain.Chunk{ID: "chk_invoice", DocumentName: "billing.md",
		Text: "Billing > Invoices > VAT number\nYour VAT number is printed on every invoice once you add it under Billing settings."}
	expressSection = domain.Chunk{ID: "chk_express", DocumentName: "Delivery options",
		Text: "## Standard delivery\nIt takes 3-5 business days and costs 4.95 GBP.\n\n## Express delivery\nIt arrives the next day and costs 9.50 GBP."}
)

func TestAnswersWithTheSentenceThatHasTheFocus(t *testing.T) {
	m := New(Options{})
	tests := []struct {
		name      string
		question  string
		knowledge []domain.Chunk
		want      string // the whole answer
		cited     []string
	}{
		{
			name:      "express, not standard",
			question:  "How much is express delivery?",
			knowledge: []domain.Chunk{refundPolicy, deliveryPrices},
			want:      "Express next-day delivery costs 9.50 GBP when ordered before 2pm.",
			cited:     []string{"chk_delivery"},
		},
		{
			name:      "express, not standard, better-ranked chunk first",
			question:  "How much is express delivery?",
			knowledge: []domain.Chunk{deliveryPrices, refundPolicy},
			want:      "Express next-day delivery costs 9.50 GBP when ordered before 2pm.",
			cited:     []string{"chk_delivery"},
		},
		{
			name:      "the focus is in a later passage",
			question:  "Do you accept Apple Pay?",
			knowledge: []domain.Chunk{shippingChunk, returnsChunk, paymentChunk},
			want:      "Apple Pay is available on iOS devices.",
			cited:     []string{"chk_payment"},
		},
		{
			name:      "only one sentence has both terms",
			question:  "Can sale items be returned?",
			knowledge: []domain.Chunk{returnsChunk, saleReturns},
			want:      "Sale items can be returned within 14 days for store credit.",
			cited:     []string{"chk_sale"},
		},
		{
			name:      "the focus is in the section heading",
			question:  "How much is express delivery?",
			knowledge: []domain.Chunk{expressSection},
			want:      "It arrives the next day and costs 9.50 GBP.",
			cited:     []string{"chk_express"},
		},
		{
			name:      "a list answers which countries without saying countries",
			question:  "Which countries do you ship to?",
			knowledge: []domain.Chunk{demoReturns, shippingChunk},
			want:      "We ship to the United States, Canada and most of Europe.",
			cited:     []string{"chk_shipping"},
		},
		{
			name:      "the heading path of a chunk is context, not an answer",
			question:  "Where do I add my VAT number?",
			knowledge: []domain.Chunk{invoicePath},
			want:      "Your VAT number is printed on every invoice once you add it under Billing settings.",
			cited:     []string{"chk_invoice"},
		},
		{
			name:      "words about the situation need not be found",
			question:  "My order is late. Can I still return it right away when it arrives?",
			knowledge: []domain.Chunk{demoShipping, demoReturns},
			want:      "You can return any unused item within 30 days of delivery. Start a return from the Orders page of your account and print the prepaid label.",
			cited:     []string{"chk_demo_returns"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comp := complete(t, m, ask(tt.question, tt.knowledge...))
			if comp.Content != tt.want {
				t.Errorf("Content = %q\nwant      %q", comp.Content, tt.want)
			}
			if !reflect.DeepEqual(comp.Cited, tt.cited) {
				t.Errorf("Cited = %v, want %v", comp.Cited, tt.cited)
			}
		})
	}
}

func TestDeclinesWhenTheFocusIsMissing(t *testing.T) {
	m := New(Options{})
	demo := []domain.Chunk{demoShipping, demoReturns}
	tests := []struct {
		name      string
		question  string
		knowledge []domain.Chunk
	}{
		{"the demo's Canada question", "Do you ship to Canada?", demo},
		{"a country the knowledge does not name", "Do you ship to Australia?", []domain.Chunk{shippingChunk, returnsChunk}},
		{"a search for it", "shipping australia", []domain.Chunk{shippingChunk}},
		{"a payment method the knowledge does not name", "Can I pay with Bitcoin?", []domain.Chunk{paymentChunk, shippingChunk}},
		{"same product words, another thing asked", "Can I return a gift card for a refund?", []domain.Chunk{returnsChunk, shippingChunk}},
		{"a price the knowledge does not give", "How much does gift wrapping cost?", []domain.Chunk{{ID: "w", Text: "Gift wrapping is available for all orders. Orders ship within 2 days."}}},
		{"the asked clause is missing even when the scene is found", "When I return an item, can I get store credit?", []domain.Chunk{returnsChunk}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comp := complete(t, m, ask(tt.question, tt.knowledge...))
			if comp.Content != "" || comp.Cited != nil {
				t.Fatalf("Content = %q, Cited = %v; want no answer", comp.Content, comp.Cited)
			}
		})
	}
}

func TestTyposDoNotMakeTheModelDecline(t *testing.T) {
	m := New(Options{})
	tests := []struct {
		question  string
		knowledge []domain.Chunk
		contains  string
		cited     string
	}{
		{"How do I reset my pasword?", allChunks(), passwordQA.Text, "chk_password"},
		{"how do i instal the desktop app", []domain.Chunk{shippingChunk, installGuide}, "To install the desktop app", "chk_install"},
		{"Do you ship to Canda?", []domain.Chunk{returnsChunk, shippingChunk}, "Canada", "chk_shipping"},
		{"Which payment methods do you acept?", []domain.Chunk{shippingChunk, paymentChunk}, "PayPal", "chk_payment"},
		{"Do I need administrater rights?", []domain.Chunk{installGuide}, "administrator account", "chk_install"},
		{"How do I get a refnud?", []domain.Chunk{shippingChunk, returnsChunk}, "Refunds are issued", "chk_returns"},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			comp := complete(t, m, ask(tt.question, tt.knowledge...))
			if !strings.Contains(comp.Content, tt.contains) || len(comp.Cited) == 0 || comp.Cited[0] != tt.cited {
				t.Fatalf("Content = %q, Cited = %v; want %q from %s", comp.Content, comp.Cited, tt.contains, tt.cited)
			}
		})
	}
	// Short words are too close to each other to be taken for typos: "Cuba"
	// is not "Cubs", nor is "Peru" "Perth".
	for _, q := range []string{"Do you ship to Cuba?", "Do you ship to Peru?"} {
		kn := domain.Chunk{ID: "c", Text: "We ship to the Cubs stadium shop and to Perth."}
		if comp := complete(t, m, ask(q, kn)); comp.Content != "" {
			t.Errorf("%s: Content = %q, want no answer", q, comp.Content)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"pasword", "password", 1, 1},
		{"instal", "install", 1, 1},
		{"conatiner", "container", 1, 1}, // neighbours swapped
		{"canda", "canada", 1, 1},
		{"acept", "accept", 1, 1},
		{"refnud", "refund", 1, 1},
		{"shop", "ship", 1, 1},
		{"same", "same", 1, 0},
		{"authentification", "authentication", 2, 2},
		{"authentification", "authentication", 1, 2},
		{"german", "germany", 1, 1},
		{"helm", "hello", 1, 2},
		{"", "abc", 3, 3},
		{"abc", "", 1, 2},
		{strings.Repeat("a", 50), strings.Repeat("a", 50), 2, 3}, // too long to compare
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}

func TestQuestionFocus(t *testing.T) {
	tests := []struct {
		question   string
		focus, key []string
	}{
		{"Do you ship to Canada?", []string{"ship", "canada"}, []string{"ship", "canada"}},
		{"How much is express delivery?", []string{"express", "delivery"}, []string{"express", "delivery"}},
		{"How much does it cost?", nil, nil},
		{"Which countries do you ship to?", []string{"country", "ship"}, []string{"ship"}},
		// The scene-setting clause is focus, but only the asked clause must
		// be found.
		{"When I run docker login, where does it keep my password?", []string{"docker", "login", "password"}, []string{"password"}},
		// A story that asks nothing by a question word or mark: nothing must be found.
		{"I tried to log in this morning and I cannot remember my password anymore", []string{"log", "remember", "password"}, nil},
		// A search: every specific word must be found.
		{"shipping canada", []string{"ship", "canada"}, []string{"ship", "canada"}},
		{"I lost my card. Will I lose my paid features right away?", []string{"paid", "featur"}, []string{"paid", "featur"}},
		// "problem" asks whether the warning matters; the warning is the subject.
		{"The app shows a warning when I scan the code. Is that a problem?", nil, nil},
		{"Is this warning a problem?", []string{"warn"}, []string{"warn"}},
		// A size and an informal "through" are not the subject.
		{"cant upload my 5gb video thru the browser. what can i do?", []string{"upload", "video", "browser"}, []string{"upload", "video", "browser"}},
		// A number in a name is the subject.
		{"Do you support 2fa with a yubikey?", []string{"support", "2fa", "yubikey"}, []string{"support", "2fa", "yubikey"}},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			q, _ := parseQuery(tt.question, nil, nil)
			if got := q.termsOf(q.focus); !reflect.DeepEqual(got, tt.focus) {
				t.Errorf("focus = %q, want %q", got, tt.focus)
			}
			if got := q.termsOf(q.key); !reflect.DeepEqual(got, tt.key) {
				t.Errorf("key = %q, want %q", got, tt.key)
			}
		})
	}
}

func (q *query) termsOf(mask uint64) []string {
	var out []string
	for i := range q.originals {
		if mask&(1<<i) != 0 {
			out = append(out, q.terms[i])
		}
	}
	return out
}

func TestNothingAskedIsFound(t *testing.T) {
	// Only the aside ("my order") is in the knowledge; what is asked is a
	// situation word the knowledge never uses.
	comp := complete(t, New(Options{}), ask("My order is late. Can I do it right away?", demoShipping))
	if comp.Content != "" {
		t.Fatalf("Content = %q, want no answer", comp.Content)
	}
}

// With the retriever's synonym table, a question in other words than the
// passage's finds its focus there instead of declining; without it, the
// same question declines.
func TestRelatedWordsBridgeTheFocus(t *testing.T) {
	erase := domain.Chunk{ID: "chk_erase", DocumentName: "Your data",
		Text: "To erase your profile, open Settings and choose Erase profile. Erasing cannot be undone."}
	related := func(w string) []string {
		if w == "wipe" {
			return []string{"erase", "pass"}
		}
		return nil
	}
	question := "How do I wipe my profile?"
	if got, _ := answer(question, []domain.Chunk{erase}, "", 600, 0, nil, nil, 0); got != "" {
		t.Fatalf("without related words the model answered %q, want a decline", got)
	}
	got, cited := answer(question, []domain.Chunk{erase}, "", 600, 0, related, nil, 0)
	if !strings.Contains(got, "Erase profile") || len(cited) == 0 {
		t.Fatalf("answer = %q cited %v, want the erase sentence", got, cited)
	}
}

// A misspelt filler word ("anyting", "insted") is not a subject the
// knowledge lacks: with a dictionary that does not know it, the model
// answers; without one, or when the dictionary knows the word (a real
// word one edit from a filler word, such as "theme" from "these"), the
// model declines as it does for any missing word.
func TestMisspeltFillerWordsAreNotMissing(t *testing.T) {
	relay := domain.Chunk{ID: "chk_relay", DocumentName: "Speed",
		Text: "To speed up page loads, run your own relay: every relay adds capacity to the network."}
	unknown := func(string) bool { return false }
	known := func(string) bool { return true }
	tests := []struct {
		name     string
		question string
		known    func(string) bool
		answers  bool
	}{
		{"misspelt anything", "Is there anyting that would speed up page loads?", unknown, true},
		{"misspelt instead", "Can I speed up page loads insted?", unknown, true},
		{"no dictionary", "Is there anyting that would speed up page loads?", nil, false},
		{"a dictionary word", "Is there anyting that would speed up page loads?", known, false},
		{"a missing subject", "Is there a plugin that would speed up page loads?", unknown, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cited := answer(tt.question, []domain.Chunk{relay}, "", 600, 0, nil, tt.known, 0)
			if tt.answers && (!strings.Contains(got, "run your own relay") || len(cited) == 0) {
				t.Fatalf("answer = %q cited %v, want the relay sentence", got, cited)
			}
			if !tt.answers && got != "" {
				t.Fatalf("answer = %q, want a decline", got)
			}
		})
	}
}

// A heading followed at once by another heading or an introducing line
// ("Minimum System Requirements", then "The app runs on Android and
// requires:") is context for what follows as a whole: the list item
// answers a question that names the first heading's words and not its own.
func TestStackedHeadingsAreContextTogether(t *testing.T) {
	vpn := domain.Chunk{ID: "chk_vpn", DocumentName: "Download and install",
		Text: "The VPN app is free software.\n\n#### Minimum System Requirements\n\nThe VPN app is only available for Android and requires:\n* Android 7.0 or newer.\n* Android device with an Arm processor.\n\nAndroid tablets are not supported.\n\n#### Play Store\n\nThe VPN app can be installed from the Play Store."}
	got, cited := answer("whats the minimum android version for the vpn app", []domain.Chunk{vpn}, "", 600, 0, nil, nil, 0.85)
	if !strings.Contains(got, "Android 7.0 or newer") || len(cited) == 0 {
		t.Fatalf("answer = %q cited %v, want the requirement", got, cited)
	}
}

// "What's the price of ...?" asks for an amount as "how much" does: a
// sentence that only says something costs more does not answer it. A
// question about a charge that asks for no amount is answered as before.
func TestWhatIsThePriceAsksForAnAmount(t *testing.T) {
	runners := domain.Chunk{ID: "chk_runners", DocumentName: "Runners",
		Text: "Jobs on macOS runners cost more to run than jobs on Linux runners. Runners are billed per minute of use."}
	tests := []struct {
		question string
		answers  bool
	}{
		{"What's the per-minute price for macOS runners?", false},
		{"What are the fees for macOS runners?", false},
		{"Do macOS runners cost more than Linux runners?", true},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			comp := complete(t, New(Options{}), ask(tt.question, runners))
			if (comp.Content != "") != tt.answers {
				t.Fatalf("Content = %q, want an answer: %v", comp.Content, tt.answers)
			}
		})
	}
	withPrice := domain.Chunk{ID: "chk_price", DocumentName: "Runners",
		Text: "Jobs on macOS runners cost more to run than jobs on Linux runners. A macOS runner costs 0.08 USD per minute."}
	comp := complete(t, New(Options{}), ask("What's the per-minute price for macOS runners?", withPrice))
	if !strings.Contains(comp.Content, "0.08 USD") {
		t.Fatalf("Content = %q, want the amount", comp.Content)
	}
}

// "How much is express delivery?" asks what it costs, though it names no
// price: a sentence saying how long express shipping takes does not answer
// it. "How much is" an amount of something else asks for no price.
func TestHowMuchIsAsksForAPrice(t *testing.T) {
	shipping := domain.Chunk{ID: "chk_shipping", DocumentName: "Shipping policy",
		Text: "Standard shipping takes 3 to 5 business days; express shipping takes 1 to 2 business days. The upload limit for return photos is 10 MB."}
	withPrice := domain.Chunk{ID: "chk_express", DocumentName: "Shipping policy",
		Text: "Express shipping takes 1 to 2 business days. Express shipping costs 9.50 GBP."}
	tests := []struct {
		question string
		chunk    domain.Chunk
		want     string // "" for a decline
	}{
		{"How much is express delivery?", shipping, ""},
		{"how much's express shipping", shipping, ""},
		{"How much is express delivery?", withPrice, "9.50 GBP"},
		{"How much is the upload limit for return photos?", shipping, "10 MB"},
	}
	for _, tt := range tests {
		t.Run(tt.question+" "+tt.chunk.ID, func(t *testing.T) {
			comp := complete(t, New(Options{}), ask(tt.question, tt.chunk))
			if tt.want == "" && comp.Content != "" || !strings.Contains(comp.Content, tt.want) {
				t.Fatalf("Content = %q, want %q", comp.Content, tt.want)
			}
		})
	}
}

// "How fast", like "how quickly", asks for a time: "fast" is not what the
// passage must say (knowledge.SituationWords).
func TestHowFastAsksForATime(t *testing.T) {
	refunds := domain.Chunk{ID: "chk_refunds", DocumentName: "Returns and refunds",
		Text: "You can return any unused item within 30 days of delivery. Refunds are issued to the original payment method within 5 business days of the return reaching us."}
	for _, q := range []string{"How fast is the refund?", "ok and the refund, how fast?", "How quickly do refunds arrive?"} {
		t.Run(q, func(t *testing.T) {
			comp := complete(t, New(Options{}), ask(q, refunds))
			if !strings.Contains(comp.Content, "within 5 business days") {
				t.Fatalf("Content = %q, want the refund's time", comp.Content)
			}
		})
	}
}

// "Is express shipping available?" asks about express shipping: a passage
// that describes it answers, though it never says "available".
func TestIsItAvailableAsksAboutTheSubject(t *testing.T) {
	shipping := domain.Chunk{ID: "chk_shipping", DocumentName: "Shipping policy",
		Text: "Standard shipping takes 3 to 5 business days; express shipping takes 1 to 2 business days."}
	comp := complete(t, New(Options{}), ask("Is express shipping available?", shipping))
	if !strings.Contains(comp.Content, "express shipping takes 1 to 2 business days") {
		t.Fatalf("Content = %q, want the express shipping sentence", comp.Content)
	}
	if comp := complete(t, New(Options{}), ask("Is gift wrapping available?", shipping)); comp.Content != "" {
		t.Fatalf("Content = %q for a subject the passage lacks, want a decline", comp.Content)
	}
}
