package local

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// Two pages of one help centre that both say something about changing the
// billing cycle; retrieval scores them (Chunk.Score) like the reranker's
// relevance.
var (
	cyclePage = domain.Chunk{ID: "chk_cycle", DocumentName: "billing-cycle.md",
		Text: "Change your billing cycle\nIf you're on a monthly plan, you can switch to a yearly plan at any time. " +
			"However, switching from a yearly to a monthly cycle isn't supported. " +
			"Your invoice shows the new cycle from the next renewal."}
	seatsPage = domain.Chunk{ID: "chk_seats", DocumentName: "manage-seats.md",
		Text: "Manage seats\nIf you're on a yearly plan, seats you remove stay available until the next billing cycle."}
	warningPage = domain.Chunk{ID: "chk_warning", DocumentName: "two-factor-apps.md",
		Text: "Two-factor apps\nIf you use OtpApp, you may see a warning about weak parameters. " +
			"We use an 80 bit secret so that older apps keep working. We recommend ignoring this message. " +
			"Other apps show no warning.\n\n## Recovery codes\nStore your recovery codes safely."}
	mountPage = domain.Chunk{ID: "chk_mount", DocumentName: "mount.md",
		Text: "Mount at login\nThe following example shows how to mount your files automatically every time you log in. " +
			"Install the davfs2 driver. Add the share to your fstab file. Restart your computer."}
	stepsPage = domain.Chunk{ID: "chk_steps", DocumentName: "delete-repository.md",
		Text: "Delete a repository\nSelect Settings, then Delete repository.\n\n## Restore\nThis action can't be undone."}
)

func withScore(c domain.Chunk, score float64) domain.Chunk {
	c.Score = score
	return c
}

func TestAnswerPrefersTheMoreRelevantPassage(t *testing.T) {
	m := New(Options{})
	question := "Can I change from a yearly plan?"
	tests := []struct {
		name      string
		knowledge []domain.Chunk
		cited     string // the first passage cited
	}{
		{"the better-scored passage wins though listed second",
			[]domain.Chunk{withScore(seatsPage, 0.2), withScore(cyclePage, 0.9)}, "chk_cycle"},
		{"the better-scored passage wins when listed first",
			[]domain.Chunk{withScore(cyclePage, 0.9), withScore(seatsPage, 0.2)}, "chk_cycle"},
		{"without scores the model reads the passages alone",
			[]domain.Chunk{seatsPage, cyclePage}, "chk_cycle"},
		// Bad input: scores that are not numbers or not positive count
		// nothing, and never make the model fail or go silent.
		{"NaN and negative scores",
			[]domain.Chunk{withScore(cyclePage, math.NaN()), withScore(seatsPage, -1)}, "chk_cycle"},
		// The infinite score counts nothing, but only cyclePage holds
		// "change" with "yearly plan": the answer starts there.
		{"an infinite score does not break the answer",
			[]domain.Chunk{withScore(cyclePage, math.Inf(1)), withScore(seatsPage, 0.5)}, "chk_cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comp := complete(t, m, ask(question, tt.knowledge...))
			if comp.Content == "" || len(comp.Cited) == 0 {
				t.Fatalf("no answer: %+v", comp)
			}
			if comp.Cited[0] != tt.cited {
				t.Errorf("Cited = %v, want %s first (Content %q)", comp.Cited, tt.cited, comp.Content)
			}
		})
	}
}

func TestAnswerContinuesWithASentenceThatRefersBack(t *testing.T) {
	m := New(Options{})
	tests := []struct {
		name      string
		question  string
		knowledge []domain.Chunk
		want      string
	}{
		{
			name:      "a however-sentence continues the one that matched",
			question:  "I'm on a monthly plan, can I switch to yearly?",
			knowledge: []domain.Chunk{cyclePage},
			want: "If you're on a monthly plan, you can switch to a yearly plan at any time. " +
				"However, switching from a yearly to a monthly cycle isn't supported.",
		},
		{
			name:      "a sentence that does not refer back is not added",
			question:  "What happens to removed seats on a yearly plan?",
			knowledge: []domain.Chunk{seatsPage, stepsPage},
			want:      "If you're on a yearly plan, seats you remove stay available until the next billing cycle.",
		},
		{
			name:      "a continuation stops at a heading",
			question:  "How do I delete a repository?",
			knowledge: []domain.Chunk{stepsPage},
			want:      "Select Settings, then Delete repository.",
		},
		// A sentence that says again what the customer told us does not
		// answer them: what the page says next does.
		{
			name:      "a sentence echoing the situation is continued by what follows it",
			question:  "OtpApp shows a warning about weak parameters when I scan the code. Is that a problem?",
			knowledge: []domain.Chunk{warningPage},
			want: "If you use OtpApp, you may see a warning about weak parameters. " +
				"We use an 80 bit secret so that older apps keep working. We recommend ignoring this message.",
		},
		{
			name:      "a message that is all question has nothing to echo",
			question:  "Will OtpApp show a warning about weak parameters?",
			knowledge: []domain.Chunk{warningPage},
			want:      "If you use OtpApp, you may see a warning about weak parameters.",
		},
		{
			name:      "a sentence announcing what follows is continued",
			question:  "How can I mount my files automatically every time I log in?",
			knowledge: []domain.Chunk{mountPage},
			want: "The following example shows how to mount your files automatically every time you log in. " +
				"Install the davfs2 driver. Add the share to your fstab file.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := complete(t, m, ask(tt.question, tt.knowledge...)).Content; got != tt.want {
				t.Errorf("Content = %q\nwant      %q", got, tt.want)
			}
		})
	}
}

func TestAnswersParaphrasesOfCommonSupportWords(t *testing.T) {
	m := New(Options{})
	passwordRules := domain.Chunk{ID: "chk_pw", DocumentName: "create-account.md",
		Text: "Your password must be at least 9 characters long. Your username must be unique."}
	sponsorFees := domain.Chunk{ID: "chk_fee", DocumentName: "sponsors-billing.md",
		Text: "Sponsorships from organization accounts carry a fee of up to 6%. Personal sponsorships carry none."}
	devices := domain.Chunk{ID: "chk_dev", DocumentName: "verify-new-device.md",
		Text: "When you sign in from a new device, we email you a verification code."}
	tests := []struct {
		name      string
		question  string
		knowledge []domain.Chunk
		want      string // "" for the fallback
	}{
		{"minimum is at least, length is long", "What's the minimum password length?",
			[]domain.Chunk{passwordRules}, "Your password must be at least 9 characters long."},
		{"a company is an organization", "Is there a fee when our company sponsors someone?",
			[]domain.Chunk{sponsorFees}, "Sponsorships from organization accounts carry a fee of up to 6%."},
		{"a laptop is a device", "Why do I get a code by email when I sign in from a new laptop?",
			[]domain.Chunk{devices}, "When you sign in from a new device, we email you a verification code."},
		{"kicking a device out is revoking it", "How do I kick a device out of my account?",
			[]domain.Chunk{{ID: "chk_s", DocumentName: "sessions.md", Text: "To end a session on another device, click Revoke session next to it."}},
			"To end a session on another device, click Revoke session next to it."},
		// Switching off asks to disable, which a passage on what the email
		// does never says; one that says how to disable it answers.
		{"switching something off is disabling it", "Can I switch off the verification code email?",
			[]domain.Chunk{devices}, ""},
		{"disabling is deactivating", "How do I turn off the verification code email?",
			[]domain.Chunk{devices, {ID: "chk_off", DocumentName: "verify-new-device.md", Text: "You can deactivate verification code emails in your security settings."}},
			"You can deactivate verification code emails in your security settings."},
		{"turning on is enabling", "how to turn on 2FA",
			[]domain.Chunk{{ID: "chk_2fa", DocumentName: "2fa.md", Text: "To protect your account, enable 2FA in your security settings."}},
			"To protect your account, enable 2FA in your security settings."},
		// The synonyms do not make an absent subject present.
		{"still no answer about what the passages never name", "What's the minimum length of a repository name?",
			[]domain.Chunk{passwordRules}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := complete(t, m, ask(tt.question, tt.knowledge...)).Content; got != tt.want {
				t.Errorf("Content = %q\nwant      %q", got, tt.want)
			}
		})
	}
}

func TestRetrievalsConfidenceLiftsTheDeclineOnAWordSaidOtherwise(t *testing.T) {
	m := New(Options{})
	sessions := domain.Chunk{ID: "chk_sessions", DocumentName: "sessions.md",
		Text: "To end a session on another device, click Revoke session next to it."}
	// "evict" is in no passage: on its own, the model declines.
	question := "How do I evict a device from my account?"
	tests := []struct {
		name          string
		answerability float64
		want          string
	}{
		{"confident retrieval", 0.9, "To end a session on another device, click Revoke session next to it."},
		{"at the bar", trustedAnswerability, "To end a session on another device, click Revoke session next to it."},
		{"below the bar", 0.6, ""},
		{"no judgement", 0, ""},
		// Bad input: a value outside [0, 1] is no judgement.
		{"above one", 1.5, ""},
		{"negative", -0.9, ""},
		{"not a number", math.NaN(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ask(question, sessions)
			req.Answerability = tt.answerability
			comp := complete(t, m, req)
			if comp.Content != tt.want {
				t.Errorf("Content = %q, want %q", comp.Content, tt.want)
			}
			if tt.want != "" && (len(comp.Cited) != 1 || comp.Cited[0] != "chk_sessions") {
				t.Errorf("Cited = %v, want [chk_sessions]", comp.Cited)
			}
		})
	}
	// Confidence never makes an answer of a question whose words are all
	// absent: there is no sentence to quote.
	req := ask("What's a good recipe for banana bread?", sessions)
	req.Answerability = 0.95
	if comp := complete(t, m, req); comp.Content != "" {
		t.Errorf("banana bread answered with %q", comp.Content)
	}
}

func TestAnswerComesFromAPassageHoldingTheKeyWordsTogether(t *testing.T) {
	m := New(Options{})
	codes := domain.Chunk{ID: "chk_codes", DocumentName: "recovery.md",
		Text: "Recovery codes let you sign in to your account when you lose your phone. Store your recovery codes safely."}
	invites := domain.Chunk{ID: "chk_invites", DocumentName: "members.md",
		Text: "Invitation links expire after 14 days."}
	expiring := domain.Chunk{ID: "chk_expiring", DocumentName: "recovery-faq.md",
		Text: "Recovery codes never expire, but each of them works only once."}
	tests := []struct {
		name          string
		question      string
		knowledge     []domain.Chunk
		answerability float64
		want          string // "" for the fallback
		cited         []string
	}{
		{
			name:      "the words are in the passages, but never together",
			question:  "Do my recovery codes expire?",
			knowledge: []domain.Chunk{codes, invites},
		},
		{
			name:          "unless retrieval is confident",
			question:      "Do my recovery codes expire?",
			knowledge:     []domain.Chunk{codes, invites},
			answerability: 0.8,
			want:          "Recovery codes let you sign in to your account when you lose your phone.",
			cited:         []string{"chk_codes"},
		},
		{
			name:      "the passage that holds them together answers, though ranked last",
			question:  "Do my recovery codes expire?",
			knowledge: []domain.Chunk{codes, invites, expiring},
			want:      "Recovery codes never expire, but each of them works only once.",
			cited:     []string{"chk_expiring"},
		},
		{
			name:      "a question in two parts is answered from two passages",
			question:  "Do you accept PayPal and how long does standard shipping take?",
			knowledge: []domain.Chunk{shippingChunk, paymentChunk},
			want: "Standard shipping takes 3–5 business days; express shipping takes 1–2 business days. " +
				"We accept Visa, Mastercard, American Express and PayPal.",
			cited: []string{"chk_shipping", "chk_payment"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ask(tt.question, tt.knowledge...)
			req.Answerability = tt.answerability
			comp := complete(t, m, req)
			if comp.Content != tt.want {
				t.Errorf("Content = %q\nwant      %q", comp.Content, tt.want)
			}
			if !reflect.DeepEqual(comp.Cited, tt.cited) {
				t.Errorf("Cited = %v, want %v", comp.Cited, tt.cited)
			}
		})
	}
}

// TestHowToIsAnsweredWithTheInstruction: "how do I ...?" and "how to ...?"
// ask for steps, which help pages write in the imperative ("Enter your VAT
// number ...", "To start, first open ..."): such a sentence is preferred to
// one that only states a rule with the same words. A question that asks
// for no steps keeps the statement.
func TestHowToIsAnsweredWithTheInstruction(t *testing.T) {
	vat := domain.Chunk{ID: "chk_vat", DocumentName: "Invoices", Text: "Your VAT number will be included on your next invoice. " +
		"It takes effect from the next billing cycle. Enter your VAT number in the Tax ID section of the billing page."}
	key := domain.Chunk{ID: "chk_key", DocumentName: "SSH keys", Text: "If you don't have permissions to transfer the key, remove the keypair and generate a new one. " +
		"To resolve the key already in use error, first remove the key from the other account."}
	tests := []struct {
		question string
		chunk    domain.Chunk
		want     string
	}{
		{"How do I add my VAT number to invoices?", vat, "Enter your VAT number in the Tax ID section of the billing page."},
		{"how to add a VAT number on an invoice", vat, "Enter your VAT number in the Tax ID section of the billing page."},
		{"Will my VAT number be on my invoice?", vat, "Your VAT number will be included on your next invoice."},
		{"Key already in use error: how can I fix it?", key, "To resolve the key already in use error, first remove the key from the other account."},
	}
	m := New(Options{})
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			req := ask(tt.question, tt.chunk)
			req.Answerability = 0.8 // retrieval judged the passage to answer
			comp := complete(t, m, req)
			if !strings.HasPrefix(comp.Content, tt.want) {
				t.Errorf("Content = %q, want it to start with %q", comp.Content, tt.want)
			}
		})
	}
}

// TestHowToFindsTheStepWithoutTheObject: "how do I return an item?" is
// answered with the step that names the action ("Start a return ..."),
// though it does not repeat "item"; a sentence that merely uses the verb
// and states no step does not qualify that way.
func TestHowToFindsTheStepWithoutTheObject(t *testing.T) {
	returns := domain.Chunk{ID: "chk_returns", DocumentName: "Returns and refunds", Text: "You can return any unused item within 30 days of delivery. " +
		"Start a return from the Orders page of your account and print the prepaid label. " +
		"Refunds are issued within 5 business days of the return reaching us."}
	comp := complete(t, New(Options{}), ask("How do I return an item?", returns))
	if !strings.Contains(comp.Content, "Start a return from the Orders page") || strings.Contains(comp.Content, "Refunds are issued") {
		t.Errorf("Content = %q, want the step, without the refunds", comp.Content)
	}
}

// TestPricePerUnitOfTimeNeedsAnAmount: "What's the per-minute price ...?"
// asks a price; a sentence that names the minute but no amount does not
// answer it (the time word is the price's unit, not a time asked for).
func TestPricePerUnitOfTimeNeedsAnAmount(t *testing.T) {
	runners := domain.Chunk{ID: "chk_runners", DocumentName: "Actions billing", Text: "Each type of runner (Linux, Windows, macOS) has a cost per minute that is determined by the operating system. " +
		"Runners are billed at the end of each month."}
	comp := complete(t, New(Options{}), ask("What's the per-minute price for macOS runners?", runners))
	if comp.Content != "" {
		t.Errorf("Content = %q, want a decline: no amount is given", comp.Content)
	}
}

// TestHowManyNeedsACount: "how many ...?" is answered by a sentence with
// a count, a figure or a word ("five", "unlimited"); one that only says
// how the things work does not answer it.
func TestHowManyNeedsACount(t *testing.T) {
	sms := domain.Chunk{ID: "chk_sms", DocumentName: "SMS codes", Text: "GitHub sends SMS codes to your phone when you sign in. " +
		"Codes arrive from a short number."}
	keys := domain.Chunk{ID: "chk_keys", DocumentName: "SSH keys", Text: "You can add up to five SSH keys to your account."}
	m := New(Options{})
	if got := complete(t, m, ask("How many SMS codes can GitHub send me in an hour?", sms)).Content; got != "" {
		t.Errorf("Content = %q, want a decline: no count is given", got)
	}
	if got := complete(t, m, ask("How many SSH keys can I add to my account?", keys)).Content; got != keys.Text {
		t.Errorf("Content = %q, want %q", got, keys.Text)
	}
}

// A link's address repeats the words of the page it points to; they are not
// what the sentence says, so a pointer to more reading does not outscore
// the sentence that answers.
func TestWordsOfAWebAddressDoNotCount(t *testing.T) {
	m := New(Options{})
	page := domain.Chunk{ID: "chk_codes", DocumentName: "account.md",
		Text: "Your account\nFor more information, see [this page](/account/two-factor/how-many-recovery-codes-you-get). " +
			"Read https://example.com/recovery-codes-for-your-account too.\n\n" +
			"## Codes\nYou get 16 recovery codes when you turn on sign-in codes."}
	want := "You get 16 recovery codes when you turn on sign-in codes."
	if got := complete(t, m, ask("How many recovery codes do I get?", page)).Content; got != want {
		t.Errorf("Content = %q\nwant      %q", got, want)
	}
}

func TestAddressEnd(t *testing.T) {
	tests := []struct {
		text        string
		word        string // the word read after i
		i, wantSkip int
	}{
		{"see [docs](/a/b-c) now", "a", 9, 18},
		{"see [docs](/a/b-c", "a", 9, 17},
		{"read https://x.org/a-b now", "https", 4, 22},
		{"read https://x.org/a-b", "https", 4, 22},
		{"read the docs now", "docs", 8, 0},
		{"a] (b) c", "b", 2, 0},
	}
	for _, tt := range tests {
		start := strings.Index(tt.text[tt.i:], tt.word) + tt.i
		if got := addressEnd(tt.text, tt.i, start, start+len(tt.word)); got != tt.wantSkip {
			t.Errorf("addressEnd(%q, %d) = %d, want %d", tt.text, tt.i, got, tt.wantSkip)
		}
	}
}
