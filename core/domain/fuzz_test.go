package domain

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

// FuzzVerifyIdentity: any identity header, signed or not, is refused with
// ErrInvalidInput or ErrUnauthorized, or verified into an identity whose
// fields are text the store accepts, within their limits.
func FuzzVerifyIdentity(f *testing.F) {
	for _, seed := range []string{
		`{"userId":"u_42","email":"ada@example.com","name":"Ada","exp":4102444800}`,
		`{"userId":"u\u0000"}`, `{"userId":""}`, `{"email":"x"}`, `[]`, `null`, `{"userId":"u","exp":1}`,
		"{\"userId\":\"\xff\"}", `{"userId":"   "}`,
	} {
		f.Add(seed, true)
		f.Add(base64.RawURLEncoding.EncodeToString([]byte(seed)), false)
	}
	ws := Workspace{ID: "ws_a", Plan: PlanEnterprise, WebhookSecret: "whsec_current"}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, payload string, encode bool) {
		identity := payload
		if encode {
			identity = base64.RawURLEncoding.EncodeToString([]byte(payload))
		}
		// Signed as the host application would sign it: the signature
		// is right, so only the payload decides.
		got, err := VerifyIdentity(&ws, identity, SignIdentity(ws.WebhookSecret, identity), now)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) && !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("VerifyIdentity(%q) = %v, want invalid input or unauthorized", identity, err)
			}
			return
		}
		if got == nil || got.UserID == "" || len(got.UserID) > 255 || len(got.Email) > 254 {
			t.Fatalf("VerifyIdentity(%q) accepted %+v", identity, got)
		}
		for _, v := range []string{got.UserID, got.Email, got.Name} {
			if p := TextProblem(v); p != "" {
				t.Fatalf("VerifyIdentity(%q) accepted %q, which %s", identity, v, p)
			}
		}
		// Anything else than that signature is refused.
		if _, err := VerifyIdentity(&ws, identity, SignIdentity("whsec_other", identity), now); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("a wrong signature: %v", err)
		}
	})
}
