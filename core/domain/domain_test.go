package domain

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPlanFeatures(t *testing.T) {
	tests := []struct {
		plan    Plan
		feature Feature
		want    bool
	}{
		{PlanFree, FeatureWidget, true},
		{PlanFree, FeatureAPIAccess, false},
		{PlanHobby, FeatureAPIAccess, false},
		{PlanStandard, FeatureAPIAccess, true},
		{PlanStandard, FeatureToolCalling, true},
		{PlanStandard, FeatureHandoff, true},
		{PlanHobby, FeatureHandoff, false},
		{PlanStandard, FeatureIdentityVerification, false},
		{PlanEnterprise, FeatureIdentityVerification, true},
		{PlanEnterprise, FeatureWhiteLabel, true},
	}
	for _, tt := range tests {
		if got := tt.plan.Includes(tt.feature); got != tt.want {
			t.Errorf("%s includes %s = %v, want %v", tt.plan, tt.feature, got, tt.want)
		}
	}
	ws := Workspace{Plan: PlanStandard, Addons: []Feature{FeatureWhiteLabel}}
	if !ws.Allows(FeatureWhiteLabel) || ws.Allows(FeatureIdentityVerification) {
		t.Fatal("add-ons must grant exactly themselves")
	}
	// An add-on cannot grant a feature that is not sold as one.
	ws = Workspace{Plan: PlanFree, Addons: []Feature{FeatureAPIAccess}}
	var perr *PlanError
	if err := ws.Require(FeatureAPIAccess); !errors.As(err, &perr) || !errors.Is(err, ErrForbidden) || perr.Plan != PlanFree {
		t.Fatalf("Require = %v", err)
	}
}

func TestValidateSlug(t *testing.T) {
	valid := []string{"a", "support", "sales-2", "x1", strings.Repeat("a", 64)}
	invalid := []string{"", "-a", "a-", "Sales", "a b", "a_b", "é", strings.Repeat("a", 65), "a/b"}
	for _, s := range valid {
		if err := ValidateSlug(s); err != nil {
			t.Errorf("ValidateSlug(%q) = %v", s, err)
		}
	}
	for _, s := range invalid {
		if err := ValidateSlug(s); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("ValidateSlug(%q) = %v, want invalid", s, err)
		}
	}
}

func TestSourceValidate(t *testing.T) {
	tests := []struct {
		name  string
		src   Source
		field string // "" means valid
	}{
		{"text", Source{Type: SourceText, Name: " Refunds ", Content: "5 days"}, ""},
		{"qa names itself after the question", Source{Type: SourceQA, Question: "Q?", Answer: "A"}, ""},
		{"no type", Source{Name: "x", Content: "y"}, "type"},
		{"unknown type", Source{Type: "pdf"}, "type"},
		{"text without name", Source{Type: SourceText, Content: "y"}, "name"},
		{"text blank content", Source{Type: SourceText, Name: "x", Content: " \n"}, "content"},
		{"text too large", Source{Type: SourceText, Name: "x", Content: strings.Repeat("a", MaxSourceContentLength+1)}, "content"},
		{"qa without question", Source{Type: SourceQA, Answer: "A"}, "question"},
		{"qa without answer", Source{Type: SourceQA, Question: "Q"}, "answer"},
		{"name too long", Source{Type: SourceText, Name: strings.Repeat("n", 301), Content: "y"}, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.src.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.src.Name == "" || strings.TrimSpace(tt.src.Name) != tt.src.Name {
					t.Fatalf("name not normalised: %q", tt.src.Name)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || verr.Fields[tt.field] == "" {
				t.Fatalf("err = %v, want a reason for %s", err, tt.field)
			}
		})
	}
}

func TestValidateMessageText(t *testing.T) {
	tests := []struct {
		text string
		msg  string
	}{
		{"hello", ""},
		{"", "message is required"},
		{" \t\n", "message is required"},
		{strings.Repeat("é", 10), ""},
		{strings.Repeat("é", 11), "message is too long"},
		{"hi\x00", "message: must not contain NUL characters"},
		{"hi \xff", "message: must be valid UTF-8 text"},
	}
	for _, tt := range tests {
		err := ValidateMessageText(tt.text, 10)
		if tt.msg == "" && err != nil || tt.msg != "" && (err == nil || err.Error() != tt.msg) {
			t.Errorf("ValidateMessageText(%q) = %v, want %q", tt.text, err, tt.msg)
		}
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID(PrefixSession)
		if !ValidID(PrefixSession, id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "ses_", "msg_" + NewID("")[0:26], "ses_" + strings.Repeat("u", 26), NewID(PrefixSession) + "0"} {
		if ValidID(PrefixSession, bad) {
			t.Errorf("ValidID accepted %q", bad)
		}
	}
	if s := NewSecret(PrefixAPIKeySecret); len(s) != len(PrefixAPIKeySecret)+52 {
		t.Fatalf("secret %q does not carry 256 bits", s)
	}
}

func TestAcceptsWebhookSecret(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ws := Workspace{WebhookSecret: "new", PreviousWebhookSecret: "old", PreviousSecretExpiresAt: now.Add(time.Minute)}
	tests := []struct {
		given string
		at    time.Time
		want  bool
	}{
		{"new", now, true},
		{"old", now, true},
		{"old", now.Add(time.Minute), false},
		{"", now, false},
		{"ne", now, false},
	}
	for _, tt := range tests {
		if got := ws.AcceptsWebhookSecret(tt.given, tt.at); got != tt.want {
			t.Errorf("AcceptsWebhookSecret(%q, %v) = %v", tt.given, tt.at, got)
		}
	}
}

func TestAgentConfigValidate(t *testing.T) {
	c := AgentConfig{SuggestedQuestions: []string{" a ", "b"}}
	if err := c.Validate(); err != nil || c.SuggestedQuestions[0] != "a" {
		t.Fatalf("Validate = %v, questions %q", err, c.SuggestedQuestions)
	}
	if c.EffectiveFallbackMessage() != DefaultFallbackMessage {
		t.Fatal("an empty fallback must fall back to the default")
	}
	c = AgentConfig{SuggestedQuestions: []string{"ok", " "}}
	if err := c.Validate(); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("blank question: %v", err)
	}
}

func TestErrorCode(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{InvalidField("limit", "bad"), CodeValidation},
		{Unauthorized("no"), CodeUnauthorized},
		{&PlanError{Feature: FeatureAPIAccess, Plan: PlanFree}, CodePlanUpgrade},
		{NotFound("agent"), CodeNotFound},
		{Conflict("taken"), CodeConflict},
		{&RateLimitError{RetryAfterSeconds: 3}, CodeRateLimited},
		{Unavailable("postgres", errors.New("refused")), CodeUnavailable},
		{fmtWrap(NotFound("session")), CodeNotFound},
		{errors.New("driver: boom"), CodeInternal},
		{nil, CodeInternal},
	}
	for _, tt := range tests {
		if got := ErrorCode(tt.err); got != tt.want {
			t.Errorf("ErrorCode(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("context"), err) }

func TestSavedReplyValidate(t *testing.T) {
	valid := SavedReply{Shortcut: "refund-policy-2", Title: "Refunds", Body: "We refund within 30 days."}
	tests := []struct {
		name   string
		change func(*SavedReply)
		field  string // "" means valid
	}{
		{"valid", func(*SavedReply) {}, ""},
		{"shortcut of 32", func(r *SavedReply) { r.Shortcut = strings.Repeat("a", 32) }, ""},
		{"title of 100 runes", func(r *SavedReply) { r.Title = strings.Repeat("é", 100) }, ""},
		{"body at the message cap", func(r *SavedReply) { r.Body = strings.Repeat("ü", MaxMessageLength) }, ""},
		{"empty shortcut", func(r *SavedReply) { r.Shortcut = "" }, "shortcut"},
		{"shortcut of 33", func(r *SavedReply) { r.Shortcut = strings.Repeat("a", 33) }, "shortcut"},
		{"upper-case shortcut", func(r *SavedReply) { r.Shortcut = "Refund" }, "shortcut"},
		{"shortcut with a space", func(r *SavedReply) { r.Shortcut = "re fund" }, "shortcut"},
		{"shortcut with a slash", func(r *SavedReply) { r.Shortcut = "/refund" }, "shortcut"},
		{"non-ASCII shortcut", func(r *SavedReply) { r.Shortcut = "réponse" }, "shortcut"},
		{"shortcut with NUL", func(r *SavedReply) { r.Shortcut = "a\x00" }, "shortcut"},
		{"blank title", func(r *SavedReply) { r.Title = "  " }, "title"},
		{"title of 101 runes", func(r *SavedReply) { r.Title = strings.Repeat("é", 101) }, "title"},
		{"invalid UTF-8 title", func(r *SavedReply) { r.Title = "\xff" }, "title"},
		{"blank body", func(r *SavedReply) { r.Body = "\n" }, "body"},
		{"body over the cap", func(r *SavedReply) { r.Body = strings.Repeat("a", MaxMessageLength+1) }, "body"},
		{"body with NUL", func(r *SavedReply) { r.Body = "hi\x00" }, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid
			tt.change(&r)
			err := r.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Fields[tt.field] == "" {
				t.Fatalf("Validate() = %v, want a ValidationError on %q", err, tt.field)
			}
		})
	}
}
