package domain

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func encodeIdentity(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }

func TestVerifyIdentity(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	enterprise := Workspace{ID: "ws_a", Plan: PlanEnterprise, WebhookSecret: "whsec_current"}
	addon := Workspace{ID: "ws_b", Plan: PlanStandard, WebhookSecret: "whsec_current", Addons: []Feature{FeatureIdentityVerification}}
	standard := Workspace{ID: "ws_c", Plan: PlanStandard, WebhookSecret: "whsec_current"}
	rotating := Workspace{ID: "ws_d", Plan: PlanEnterprise, WebhookSecret: "whsec_new", PreviousWebhookSecret: "whsec_current", PreviousSecretExpiresAt: now.Add(time.Hour)}
	expiredRotation := rotating
	expiredRotation.PreviousSecretExpiresAt = now.Add(-time.Second)

	valid := encodeIdentity(`{"userId":"u_42","email":"ada@example.com","name":"Ada","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`)
	expired := encodeIdentity(`{"userId":"u_42","exp":` + itoa(now.Add(-time.Second).Unix()) + `}`)
	noUser := encodeIdentity(`{"email":"ada@example.com"}`)
	notJSON := encodeIdentity(`userId=u_42`)
	noExp := encodeIdentity(`{"userId":"u_7"}`)
	nulUser := encodeIdentity(`{"userId":"u\u0000"}`)
	nulName := encodeIdentity(`{"userId":"u_7","name":"A\u0000"}`)
	rawNotUTF8 := encodeIdentity("{\"userId\":\"u_\xff\"}")
	longEmail := encodeIdentity(`{"userId":"u_7","email":"` + strings.Repeat("a", 250) + `@x.io"}`)

	tests := []struct {
		name      string
		ws        Workspace
		identity  string
		signature string
		wantUser  string
		wantErr   error
	}{
		{"no headers is anonymous", enterprise, "", "", "", nil},
		{"valid signature", enterprise, valid, SignIdentity("whsec_current", valid), "u_42", nil},
		{"valid without exp", enterprise, noExp, SignIdentity("whsec_current", noExp), "u_7", nil},
		{"add-on on Standard", addon, valid, SignIdentity("whsec_current", valid), "u_42", nil},
		{"uppercase hex accepted", enterprise, valid, strings.ToUpper(SignIdentity("whsec_current", valid)), "u_42", nil},
		{"previous secret during grace", rotating, valid, SignIdentity("whsec_current", valid), "u_42", nil},
		{"previous secret after grace", expiredRotation, valid, SignIdentity("whsec_current", valid), "", ErrUnauthorized},
		{"tampered payload", enterprise, encodeIdentity(`{"userId":"admin"}`), SignIdentity("whsec_current", valid), "", ErrUnauthorized},
		{"wrong key", enterprise, valid, SignIdentity("whsec_other", valid), "", ErrUnauthorized},
		{"signature not hex", enterprise, valid, "zz", "", ErrUnauthorized},
		{"expired exp", enterprise, expired, SignIdentity("whsec_current", expired), "", ErrUnauthorized},
		{"non-Enterprise workspace", standard, valid, SignIdentity("whsec_current", valid), "", ErrForbidden},
		{"identity without signature", enterprise, valid, "", "", ErrInvalidInput},
		{"signature without identity", enterprise, "", "abc", "", ErrInvalidInput},
		{"missing userId", enterprise, noUser, SignIdentity("whsec_current", noUser), "", ErrInvalidInput},
		{"not JSON", enterprise, notJSON, SignIdentity("whsec_current", notJSON), "", ErrInvalidInput},
		{"NUL in userId", enterprise, nulUser, SignIdentity("whsec_current", nulUser), "", ErrInvalidInput},
		{"NUL in name", enterprise, nulName, SignIdentity("whsec_current", nulName), "", ErrInvalidInput},
		{"payload not UTF-8", enterprise, rawNotUTF8, SignIdentity("whsec_current", rawNotUTF8), "", ErrInvalidInput},
		{"email too long", enterprise, longEmail, SignIdentity("whsec_current", longEmail), "", ErrInvalidInput},
		{"oversized header", enterprise, strings.Repeat("a", MaxIdentityHeaderBytes+1), "00", "", ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifyIdentity(&tt.ws, tt.identity, tt.signature, now)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if got != nil {
					t.Fatalf("identity = %+v on error", got)
				}
				if err != nil && strings.Contains(err.Error(), "whsec_") {
					t.Fatalf("error leaks a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantUser == "" {
				if got != nil {
					t.Fatalf("want anonymous, got %+v", got)
				}
				return
			}
			if got == nil || got.UserID != tt.wantUser {
				t.Fatalf("identity = %+v, want user %s", got, tt.wantUser)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestVerifySessionCaller(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ws := Workspace{ID: "ws_a", Plan: PlanEnterprise, WebhookSecret: "whsec_current"}
	ada, bob := encodeIdentity(`{"userId":"u_ada"}`), encodeIdentity(`{"userId":"u_bob"}`)
	tests := []struct {
		name      string
		owner     string
		identity  string
		signature string
		wantErr   error
	}{
		{"anonymous session, anonymous caller", "", "", "", nil},
		{"anonymous session, verified caller", "", ada, SignIdentity("whsec_current", ada), nil},
		{"verified session, anonymous caller", "u_ada", "", "", nil},
		{"verified session, same user", "u_ada", ada, SignIdentity("whsec_current", ada), nil},
		{"verified session, another user", "u_ada", bob, SignIdentity("whsec_current", bob), ErrNotFound},
		{"bad signature", "u_ada", ada, SignIdentity("whsec_other", ada), ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv := Conversation{ID: "ses_1", WorkspaceID: ws.ID, VerifiedUserID: tt.owner}
			if err := VerifySessionCaller(&ws, conv, tt.identity, tt.signature, now); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
