package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// A secret the console makes (a new API key, the webhook secret, a signing
// secret, an invitation link) is never the answer to the POST that made
// it: a reload would post the form again (a second key, a second rotation)
// and the secret would sit in the browser's history. The POST seals the
// secret into a reveal, keeps it in the OneTimeStore (Redis) for a few
// minutes, and redirects (303) to its page with ?shown=<id>; that GET takes
// the reveal (read and deleted in one step) and shows the secret once. A
// reload of the GET finds nothing and says the secret was shown already;
// it never makes anything.
//
// Redis and not PostgreSQL: the value must vanish by itself minutes later
// and be read once, which SET with an expiry and GETDEL give atomically
// and without a sweeper; and a secret written to the database would live
// on in its WAL, its replicas and its backups long after it was shown.
// Even so, what Redis holds is sealed (AES-256-GCM) with a key derived
// from the session's cookie token, which the server never stores: a copy
// of Redis alone opens nothing, and only the browser that made the secret
// can show it. The store key also names the session, so another session
// cannot take the reveal (and so make it disappear) either.

// revealTTL is how long a reveal waits for its page: a redirect takes a
// moment; minutes allow for a slow network without leaving it for long.
const revealTTL = 5 * time.Minute

// shownParam is the query parameter naming a reveal.
const shownParam = "shown"

// revealKind says which page may show a reveal, so an id taken from one
// page's URL shows nothing on another.
type revealKind string

const (
	revealAPIKey  revealKind = "apikey"
	revealWebhook revealKind = "webhook"
	revealSigning revealKind = "signing"
	revealInvite  revealKind = "invite"
)

// reveal is what a POST leaves for the GET that shows its secret. It is
// JSON only inside the sealed box, never on the wire.
type reveal struct {
	Kind        revealKind
	WorkspaceID string
	Secret      string
	// Name is the API key's; Email, ExpiresAt and Emailed the invitation's.
	Name      string
	Email     string
	ExpiresAt time.Time
	Emailed   bool
	// Notice is a string table key the page shows with the secret.
	Notice string
}

// revealNotices are the notices a reveal may carry.
var revealNotices = map[string]bool{"secret.rotated": true, "integrations.saved": true, "signing.rotated": true}

// revealStore is the OneTimeStore, or 503 when the console was built
// without one. Handlers check it before making a secret, so a secret is
// never made that could not be shown.
func (h *Handlers) revealStore() error {
	if h.reveals == nil {
		return domain.Unavailable("one-time store", errors.New("console built without Options.Reveals"))
	}
	return nil
}

// keepReveal seals r for this session and redirects to page with its id.
// If the store fails after the secret was made, the secret is lost (an
// error page, never the secret); the person makes another.
func (h *Handlers) keepReveal(c *fiber.Ctx, page string, r reveal) error {
	if err := h.revealStore(); err != nil {
		return err
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("console: reveal id: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	key := revealKey(c, id)
	plain, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("console: encoding a reveal: %w", err)
	}
	sealed, err := seal(sessionToken(c), key, plain)
	if err != nil {
		return err
	}
	if err := h.reveals.PutOnce(c.UserContext(), key, sealed, revealTTL); err != nil {
		return err
	}
	return redirect(c, page+"?"+shownParam+"="+id)
}

// takeReveal returns the reveal the request's ?shown= names, for a page
// of the kind in the member's workspace, once. It returns nil when the
// request names none, and nil with v.Notice saying so when the reveal was
// shown already, expired, or is not this session's, page's or workspace's.
func (h *Handlers) takeReveal(c *fiber.Ctx, v *view, kind revealKind) (*reveal, error) {
	id := c.Query(shownParam)
	// A HEAD gets no body, so it must not use the secret up: a link
	// checker or a proxy probing the page would otherwise hide it from
	// the person it was made for.
	if id == "" || c.Method() == fiber.MethodHead {
		return nil, nil
	}
	gone := func() (*reveal, error) {
		v.Notice = mustText("reveal.gone")
		return nil, nil
	}
	if raw, err := hex.DecodeString(id); err != nil || len(raw) != 16 {
		return gone()
	}
	if err := h.revealStore(); err != nil {
		return nil, err
	}
	key := revealKey(c, id)
	sealed, err := h.reveals.TakeOnce(c.UserContext(), key)
	if errors.Is(err, domain.ErrNotFound) {
		return gone()
	}
	if err != nil {
		return nil, err
	}
	plain, err := open(sessionToken(c), key, sealed)
	if err != nil {
		return gone()
	}
	var r reveal
	if err := json.Unmarshal(plain, &r); err != nil || r.Kind != kind || r.WorkspaceID != member(c).WorkspaceID {
		return gone()
	}
	if revealNotices[r.Notice] {
		v.Notice = mustText(r.Notice)
	}
	return &r, nil
}

// revealKey names a reveal in the store: the session's id (not its token)
// and the reveal's.
func revealKey(c *fiber.Ctx, id string) string {
	return "console-reveal:" + principal(c).Session.ID + ":" + id
}

// revealCipher derives the sealing key from the session's cookie token.
func revealCipher(token string) (cipher.AEAD, error) {
	k := sha256.Sum256([]byte("concierge console reveal\x00" + token))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("console: reveal cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal encrypts plain, bound to the store key (as additional data), so a
// sealed value moved to another key does not open.
func seal(token, key string, plain []byte) ([]byte, error) {
	aead, err := revealCipher(token)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("console: reveal nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plain, []byte(key)), nil
}

func open(token, key string, sealed []byte) ([]byte, error) {
	aead, err := revealCipher(token)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("console: reveal too short")
	}
	return aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(key))
}
