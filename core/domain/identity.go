package domain

// Identity is an end user vouched for by the host application through the
// X-Service-Identity and X-Service-Signature headers.
type Identity struct {
	UserID string
	Email  string
	Name   string
	// ExpiresAt is the payload's exp in unix seconds; 0 means no expiry.
	ExpiresAt int64
}
