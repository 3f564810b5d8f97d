package domain

import "time"

// APIKey authenticates API calls for one workspace. Only a hash of the secret
// and a short display prefix are stored; the secret is shown once.
type APIKey struct {
	ID          string
	WorkspaceID string
	Name        string
	// DisplayPrefix is the first characters of the secret, for people to tell keys apart.
	DisplayPrefix string
	// Hash is HashSecret of the full secret.
	Hash       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// NewAPIKey creates a key and returns it with its secret, which is not kept.
func NewAPIKey(workspaceID, name string, now time.Time) (APIKey, string) {
	secret := NewSecret(PrefixAPIKeySecret)
	return APIKey{
		ID:            NewID(PrefixAPIKey),
		WorkspaceID:   workspaceID,
		Name:          name,
		DisplayPrefix: secret[:len(PrefixAPIKeySecret)+6],
		Hash:          HashSecret(secret),
		CreatedAt:     now,
	}, secret
}

// Active reports whether the key can still authenticate.
func (k *APIKey) Active() bool { return k.RevokedAt == nil }
