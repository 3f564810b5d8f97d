package domain_test

import (
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

func TestDecideOutcome(t *testing.T) {
	last := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	day, week := domain.OutcomeQuietWindow, domain.OutcomeRecontactWindow
	// answered is an agent-only conversation whose last answer was fine,
	// of an anonymous visitor.
	answered := domain.OutcomeSignals{
		Status: domain.StatusAI, FirstQuestion: "How do I reset my password?",
		LastQuestion: "How do I reset my password?", LastActivityAt: last,
	}
	with := func(change func(*domain.OutcomeSignals)) domain.OutcomeSignals {
		s := answered
		change(&s)
		return s
	}
	verified := func(s *domain.OutcomeSignals) { s.VerifiedUserID = "user-1" }
	returned := func(after time.Duration, question string) func(*domain.OutcomeSignals) {
		return func(s *domain.OutcomeSignals) {
			verified(s)
			s.LaterContacts = []domain.LaterContact{{ConversationID: "ses_later", CreatedAt: last.Add(after), FirstQuestion: question}}
		}
	}
	final := func(o domain.Outcome) domain.OutcomeDecision { return domain.OutcomeDecision{Outcome: o, Final: true} }
	tests := []struct {
		name    string
		signals domain.OutcomeSignals
		now     time.Time
		want    domain.OutcomeDecision
	}{
		{"no question: nothing to decide", with(func(s *domain.OutcomeSignals) { s.FirstQuestion, s.LastQuestion = "", "" }),
			last.Add(day), domain.OutcomeDecision{Final: true}},
		{"only small talk: nothing asked", with(func(s *domain.OutcomeSignals) { s.FirstQuestion, s.LastQuestion = "hi", "" }),
			last.Add(day), domain.OutcomeDecision{Final: true}},
		{"only small talk, then a person: handed off", with(func(s *domain.OutcomeSignals) {
			s.FirstQuestion, s.LastQuestion, s.PersonRequested, s.Status = "hi", "", true, domain.StatusHandoffRequested
		}), last.Add(day), final(domain.OutcomeHandedOff)},
		{"quiet just under 24 h: undecided", answered, last.Add(day - time.Microsecond),
			domain.OutcomeDecision{NextCheck: last.Add(day)}},
		{"quiet 24 h exactly: decided", answered, last.Add(day), final(domain.OutcomeResolvedUnconfirmed)},
		{"person resolved", with(func(s *domain.OutcomeSignals) {
			s.PersonRequested, s.PersonReplied, s.Status = true, true, domain.StatusResolved
		}),
			last.Add(day), final(domain.OutcomeResolvedByPerson)},
		{"person resolution beats a thumbs up", with(func(s *domain.OutcomeSignals) {
			s.PersonReplied, s.Status, s.LatestRating = true, domain.StatusResolved, domain.RatingUp
		}), last.Add(day), final(domain.OutcomeResolvedByPerson)},
		{"handoff requested, nobody answered", with(func(s *domain.OutcomeSignals) { s.PersonRequested, s.Status = true, domain.StatusHandoffRequested }),
			last.Add(day), final(domain.OutcomeHandedOff)},
		{"a person answering, not resolved", with(func(s *domain.OutcomeSignals) {
			s.PersonRequested, s.PersonReplied, s.Status = true, true, domain.StatusHuman
		}),
			last.Add(day), final(domain.OutcomeHandedOff)},
		{"reopened after a person resolved it", with(func(s *domain.OutcomeSignals) {
			s.PersonRequested, s.PersonReplied, s.Status = true, true, domain.StatusAI
		}),
			last.Add(day), final(domain.OutcomeHandedOff)},
		{"handoff beats a fallback", with(func(s *domain.OutcomeSignals) {
			s.PersonRequested, s.LastTurnFailed, s.Status = true, true, domain.StatusHuman
		}),
			last.Add(day), final(domain.OutcomeHandedOff)},
		{"team resolved an agent-only conversation: agent rules", with(func(s *domain.OutcomeSignals) { s.Status = domain.StatusResolved }),
			last.Add(day), final(domain.OutcomeResolvedUnconfirmed)},
		{"thumbs up", with(func(s *domain.OutcomeSignals) { s.LatestRating = domain.RatingUp }), last.Add(day), final(domain.OutcomeResolvedConfirmed)},
		{"visitor says it helped", with(func(s *domain.OutcomeSignals) { s.LastQuestion = "Thanks, that helped!" }),
			last.Add(day), final(domain.OutcomeResolvedConfirmed)},
		{"said it helped beats the fallback answering the thanks", with(func(s *domain.OutcomeSignals) { s.LastQuestion, s.LastTurnFailed = "that worked, thanks", true }),
			last.Add(day), final(domain.OutcomeResolvedConfirmed)},
		{"fallback in the last turn", with(func(s *domain.OutcomeSignals) { s.LastTurnFailed = true }), last.Add(day), final(domain.OutcomeAbandonedAfterFallback)},
		{"fallback in the last turn beats an earlier thumbs up", with(func(s *domain.OutcomeSignals) { s.LastTurnFailed, s.LatestRating = true, domain.RatingUp }),
			last.Add(day), final(domain.OutcomeAbandonedAfterFallback)},
		{"thumbs down, no handoff", with(func(s *domain.OutcomeSignals) { s.LatestRating = domain.RatingDown }), last.Add(day), final(domain.OutcomeAbandonedAfterFallback)},
		{"verified user, within 7 days: unconfirmed, not final", with(verified), last.Add(day),
			domain.OutcomeDecision{Outcome: domain.OutcomeResolvedUnconfirmed, NextCheck: last.Add(week)}},
		{"verified user, 7 days exactly: final", with(verified), last.Add(week), final(domain.OutcomeResolvedUnconfirmed)},
		{"re-contact on the same topic within 24 h", with(returned(2*time.Hour, "password reset email never arrives")),
			last.Add(day), final(domain.OutcomeRecontact)},
		{"re-contact at 7 days exactly", with(returned(week, "reset password")), last.Add(week + time.Hour), final(domain.OutcomeRecontact)},
		{"back just after 7 days: no re-contact", with(returned(week+time.Microsecond, "reset password")),
			last.Add(week + time.Hour), final(domain.OutcomeResolvedUnconfirmed)},
		{"back on another topic: still resolved", with(returned(time.Hour, "What are your opening hours?")),
			last.Add(day), domain.OutcomeDecision{Outcome: domain.OutcomeResolvedUnconfirmed, NextCheck: last.Add(week)}},
		{"re-contact does not override a thumbs up", with(func(s *domain.OutcomeSignals) {
			returned(time.Hour, "reset password")(s)
			s.LatestRating = domain.RatingUp
		}), last.Add(day), final(domain.OutcomeResolvedConfirmed)},
		{"re-contact does not override a handoff", with(func(s *domain.OutcomeSignals) {
			returned(time.Hour, "reset password")(s)
			s.PersonRequested, s.Status = true, domain.StatusHandoffRequested
		}), last.Add(day), final(domain.OutcomeHandedOff)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := domain.DecideOutcome(tt.signals, tt.now); got != tt.want {
				t.Errorf("DecideOutcome = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestDecideOutcomeLateEvents walks the decisions of one conversation as
// late events arrive: each is a new set of signals the worker decides again.
func TestDecideOutcomeLateEvents(t *testing.T) {
	last := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	s := domain.OutcomeSignals{Status: domain.StatusAI, VerifiedUserID: "user-1", FirstQuestion: "How do I export my invoices?",
		LastQuestion: "How do I export my invoices?", LastActivityAt: last}
	steps := []struct {
		name   string
		change func(*domain.OutcomeSignals)
		now    time.Time
		want   domain.Outcome
	}{
		{"quiet a day", func(*domain.OutcomeSignals) {}, last.Add(25 * time.Hour), domain.OutcomeResolvedUnconfirmed},
		{"back on the same topic on day 3", func(s *domain.OutcomeSignals) {
			s.LaterContacts = []domain.LaterContact{{CreatedAt: last.Add(72 * time.Hour), FirstQuestion: "invoice export is empty"}}
		}, last.Add(72 * time.Hour), domain.OutcomeRecontact},
		{"a late thumbs up", func(s *domain.OutcomeSignals) { s.LatestRating = domain.RatingUp }, last.Add(80 * time.Hour), domain.OutcomeResolvedConfirmed},
		{"reopened: undecided again", func(s *domain.OutcomeSignals) {
			s.LastActivityAt, s.LastQuestion = last.Add(81*time.Hour), "one more thing"
		}, last.Add(82 * time.Hour), ""},
		{"the reopened turn went quiet", func(*domain.OutcomeSignals) {}, last.Add(105 * time.Hour), domain.OutcomeResolvedConfirmed},
		{"thumbs changed to down", func(s *domain.OutcomeSignals) { s.LatestRating = domain.RatingDown }, last.Add(106 * time.Hour), domain.OutcomeAbandonedAfterFallback},
	}
	for _, step := range steps {
		step.change(&s)
		if got := domain.DecideOutcome(s, step.now).Outcome; got != step.want {
			t.Fatalf("%s: outcome %q, want %q", step.name, got, step.want)
		}
	}
}

func TestSaysItHelped(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"Thanks, that helped!", true},
		{"THAT WORKED", true},
		{"Perfect, exactly what I needed.", true},
		{"very helpful, thank you", true},
		{"thanks", false},
		{"that didn't help", false},
		{"that helped but it still fails", false},
		{"it worked yesterday, not today", false},
		{"how do I reset my password?", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := domain.SaysItHelped(tt.text); got != tt.want {
			t.Errorf("SaysItHelped(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestSameTopic(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"How do I reset my password?", "password reset link not working", true},
		{"How do I reset my passwords?", "Password reset", true},
		{"Can I cancel my subscription?", "subscription price", true},
		{"How do I reset my password?", "What are your opening hours?", false},
		{"How do I reset my password?", "change the email address on my account", false},
		{"hi", "hi", false},
		{"", "password", false},
		{"Where is my order 12345?", "order 12345 late", true},
	}
	for _, tt := range tests {
		if got := domain.SameTopic(tt.a, tt.b); got != tt.want {
			t.Errorf("SameTopic(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := domain.SameTopic(tt.b, tt.a); got != tt.want {
			t.Errorf("SameTopic(%q, %q) = %v, want %v (not symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestLastQuestion(t *testing.T) {
	tests := []struct {
		name       string
		recent     []string // latest first
		failed     []bool
		want       string
		wantFailed bool
	}{
		{"the latest message asks", []string{"Where is my order?", "hi"}, []bool{false, false}, "Where is my order?", false},
		{"thanks after a failed question", []string{"ok thanks", "Do you ship to Canada?"}, []bool{false, true}, "Do you ship to Canada?", true},
		{"yes to the offer of a person", []string{"yes please", "Do you ship to Canada?"}, []bool{false, true}, "Do you ship to Canada?", true},
		{"a request for a person", []string{"can I talk to a human?", "Where is my order?"}, []bool{false, false}, "Where is my order?", false},
		{"a confirmation counts", []string{"perfect, that worked", "Where is my order?"}, []bool{false, false}, "perfect, that worked", false},
		{"small talk only", []string{"bye", "hi"}, []bool{false, false}, "", false},
		{"nothing", nil, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, failed := domain.LastQuestion(tt.recent, tt.failed)
			if got != tt.want || failed != tt.wantFailed {
				t.Errorf("LastQuestion = %q, %v; want %q, %v", got, failed, tt.want, tt.wantFailed)
			}
		})
	}
}
