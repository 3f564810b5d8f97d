package domain

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// ID prefixes. Session ids are capabilities (the widget uses them with no key),
// so every id carries 128 random bits from crypto/rand: never sequential, never
// derived from time.
const (
	PrefixWorkspace    = "ws_"
	PrefixAPIKey       = "key_"
	PrefixAgent        = "agt_"
	PrefixSource       = "src_"
	PrefixSession      = "ses_"
	PrefixMessage      = "msg_"
	PrefixInboundEvent = "evt_"
	PrefixChunk        = "chk_"
	PrefixDelivery     = "dlv_"
	PrefixSavedReply   = "rpl_"
	// PrefixAPIKeySecret starts every API key secret, so leaked keys are easy
	// to recognise in logs and by secret scanners.
	PrefixAPIKeySecret = "ck_live_"
	// PrefixWebhookSecret starts every webhook secret.
	PrefixWebhookSecret = "whsec_"
)

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns prefix followed by 128 random bits in lowercase Crockford base32.
func NewID(prefix string) string { return prefix + randomText(16) }

// NewSecret returns prefix followed by 256 random bits.
func NewSecret(prefix string) string { return prefix + randomText(32) }

func randomText(n int) string { return idEncoding.EncodeToString(randomBytes(n)) }

// randomBytes returns n bytes from crypto/rand.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ panics itself).
		panic("crypto/rand: " + err.Error())
	}
	return b
}

// ValidID reports whether s looks like an id with the given prefix: the right
// prefix and 26 base32 characters. It lets edges reject garbage before a query.
func ValidID(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != 26 {
		return false
	}
	for _, r := range rest {
		if !strings.ContainsRune("0123456789abcdefghjkmnpqrstvwxyz", r) {
			return false
		}
	}
	return true
}
