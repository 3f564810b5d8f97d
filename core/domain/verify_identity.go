package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxIdentityHeaderBytes bounds the X-Service-Identity header.
const MaxIdentityHeaderBytes = 4096

// identityPayload is the JSON inside X-Service-Identity. It is a wire format
// the host application produces, parsed here because verifying it is a
// workspace rule, not an HTTP concern.
type identityPayload struct {
	UserID string `json:"userId"`
	Email  string `json:"email,omitempty"`
	Name   string `json:"name,omitempty"`
	Exp    int64  `json:"exp,omitempty"`
}

// VerifyIdentity checks the identity headers' values for a workspace. Both
// empty means an anonymous caller (nil, nil). Malformed input is
// ErrInvalidInput; a bad signature or an expired payload is
// ErrUnauthorized; a workspace without identity verification gets a
// PlanError.
func VerifyIdentity(ws *Workspace, identity, signature string, now time.Time) (*Identity, error) {
	if identity == "" && signature == "" {
		return nil, nil
	}
	if identity == "" || signature == "" {
		return nil, Invalid("X-Service-Identity and X-Service-Signature must be sent together")
	}
	if len(identity) > MaxIdentityHeaderBytes {
		return nil, Invalid("X-Service-Identity must be at most 4096 bytes")
	}
	if err := ws.Require(FeatureIdentityVerification); err != nil {
		return nil, err
	}
	given, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil || len(given) != sha256.Size {
		return nil, Unauthorized("invalid identity signature")
	}
	// Compare against every secret currently valid, always computing each MAC so
	// the time taken does not tell which secret was close.
	valid := hmac.Equal(given, sign(ws.WebhookSecret, identity))
	if ws.PreviousWebhookSecret != "" && now.Before(ws.PreviousSecretExpiresAt) {
		valid = hmac.Equal(given, sign(ws.PreviousWebhookSecret, identity)) || valid
	}
	if !valid {
		return nil, Unauthorized("invalid identity signature")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(identity, "="))
	if err != nil {
		return nil, Invalid("X-Service-Identity must be base64url-encoded JSON")
	}
	var p identityPayload
	if !utf8.Valid(raw) || json.Unmarshal(raw, &p) != nil {
		return nil, Invalid("X-Service-Identity must be base64url-encoded JSON")
	}
	p.UserID = strings.TrimSpace(p.UserID)
	if p.UserID == "" || len(p.UserID) > 255 {
		return nil, Invalid("X-Service-Identity: userId is required (1 to 255 characters)")
	}
	// The payload is signed, so this is the host application's bug, not an
	// attack; it still must not reach the store as text PostgreSQL refuses.
	for _, f := range [...]struct{ name, value string }{{"userId", p.UserID}, {"email", p.Email}, {"name", p.Name}} {
		if problem := TextProblem(f.value); problem != "" {
			return nil, Invalid("X-Service-Identity: %s %s", f.name, problem)
		}
	}
	if len(p.Email) > 254 || utf8.RuneCountInString(p.Name) > 200 {
		return nil, Invalid("X-Service-Identity: email must be at most 254 bytes and name at most 200 characters")
	}
	if p.Exp != 0 && !now.Before(time.Unix(p.Exp, 0)) {
		return nil, Unauthorized("identity has expired")
	}
	return &Identity{UserID: p.UserID, Email: p.Email, Name: p.Name, ExpiresAt: p.Exp}, nil
}

// VerifySessionCaller checks the identity headers of a caller of conv's
// session against the session's workspace ws (VerifyIdentity's errors). A
// session a verified user opened is not another verified user's: that
// caller gets ErrNotFound ("session"), as if the session did not exist.
func VerifySessionCaller(ws *Workspace, conv Conversation, identity, signature string, now time.Time) error {
	id, err := VerifyIdentity(ws, identity, signature, now)
	if err != nil {
		return err
	}
	if id != nil && conv.VerifiedUserID != "" && id.UserID != conv.VerifiedUserID {
		return NotFound("session")
	}
	return nil
}

// SignIdentity returns the X-Service-Signature for an X-Service-Identity value;
// host applications do the same on their side (the README shows how).
func SignIdentity(secret, identity string) string {
	return hex.EncodeToString(sign(secret, identity))
}

func sign(secret, identity string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(identity))
	return mac.Sum(nil)
}
