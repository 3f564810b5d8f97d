package console_test

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// shownSecret finds the secret a page shows with its copy button.
var shownSecret = regexp.MustCompile(`<code id="(?:key-secret|webhook-secret|signing-secret|invite-link)" class="break">([^<]+)</code>`)

// secretFlow is a POST that makes or reveals a secret, as whom, and what it
// changed (a snapshot of the fakes' state), to show a reload changes nothing.
type secretFlow struct {
	name, as, path string
	form           url.Values
	state          func(h *harness) string
}

func secretFlows() []secretFlow {
	return []secretFlow{
		{"new API key", "admin", "/console/w/ws_a/settings/api-keys", url.Values{"name": {"CI"}},
			func(h *harness) string { return fmt.Sprint(len(h.settings.keys["ws_a"])) }},
		{"webhook secret revealed", "owner", "/console/w/ws_a/settings/webhook-secret/reveal", url.Values{"password": {ownerPassword}},
			func(h *harness) string { return fmt.Sprint(h.settings.secrets["ws_a"]) }},
		{"webhook secret rotated", "owner", "/console/w/ws_a/settings/webhook-secret/rotate", url.Values{"grace": {"1h"}, "password": {ownerPassword}},
			func(h *harness) string { return fmt.Sprint(h.settings.secrets["ws_a"]) }},
		{"first signing secret", "admin", "/console/w/ws_a/settings/integrations", url.Values{"eventsUrl": {"https://hooks.example.com/c"}},
			func(h *harness) string { return fmt.Sprint(h.settings.integrations["ws_a"]) }},
		{"signing secret rotated", "admin", "/console/w/ws_a/settings/integrations/signing-secret", nil,
			func(h *harness) string { return fmt.Sprint(h.settings.integrations["ws_a"]) }},
		{"invitation link", "admin", "/console/w/ws_a/members/invitations", url.Values{"email": {"nia@example.com"}, "role": {"agent"}},
			func(h *harness) string { return fmt.Sprint(len(h.accounts.invitations)) }},
	}
}

// Every secret follows Post/Redirect/Get: the POST answers 303 without the
// secret, the GET shows it once (no-store, and a HEAD before it takes
// nothing), and the same GET again says it was shown and makes nothing. What the store holds is sealed (the secret
// is not in it) and expires within five minutes.
func TestSecretsShownOnce(t *testing.T) {
	for _, f := range secretFlows() {
		t.Run(f.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			h.seedSettings(t)
			posted := h.do(t, req{Method: "POST", Path: f.path, As: f.as, Form: f.form})
			if posted.Status != http.StatusSeeOther || !strings.Contains(posted.location(), "?shown=") ||
				strings.Contains(posted.Body, "<code") {
				t.Fatalf("POST: %d, Location %q:\n%s", posted.Status, posted.location(), posted.Body)
			}
			made := f.state(h)

			// A HEAD (a link checker, a proxy) does not use the secret up.
			if head := h.do(t, req{Method: "HEAD", Path: posted.location(), As: f.as}); head.Status != http.StatusOK {
				t.Fatalf("HEAD: %d", head.Status)
			}
			first := h.do(t, req{Path: posted.location(), As: f.as})
			m := shownSecret.FindStringSubmatch(first.Body)
			if first.Status != http.StatusOK || m == nil {
				t.Fatalf("first GET shows no secret: %d\n%s", first.Status, first.Body)
			}
			secret := html.UnescapeString(m[1])
			if cc := first.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("the page showing the secret has Cache-Control %q, want no-store", cc)
			}
			for key, v := range h.once.put {
				if bytes.Contains(v, []byte(secret)) || strings.Contains(key, secret) {
					t.Fatalf("the store holds the secret in the clear under %q", key)
				}
			}
			if len(h.once.ttls) != 1 || h.once.ttls[0] <= 0 || h.once.ttls[0] > 5*time.Minute {
				t.Fatalf("stored with TTLs %v, want one of at most 5 minutes", h.once.ttls)
			}

			for range 2 {
				again := h.do(t, req{Path: posted.location(), As: f.as})
				if again.Status != http.StatusOK || strings.Contains(again.Body, html.EscapeString(secret)) ||
					shownSecret.MatchString(again.Body) || !strings.Contains(again.Body, "This secret was shown once already") {
					t.Fatalf("a reload shows the secret or no explanation: %d\n%s", again.Status, again.Body)
				}
				if again.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("reload: Cache-Control %q", again.Header.Get("Cache-Control"))
				}
			}
			if got := f.state(h); got != made || h.once.puts() != 1 {
				t.Fatalf("the reloads changed state: %s, then %s (%d values stored)", made, got, h.once.puts())
			}
		})
	}
}

// A reveal belongs to the session and the page that made it: another
// member of the workspace, a member of another workspace, another page or
// a made-up id shows nothing, and taking it there does not spoil it for its
// owner. Only its own session sees it.
func TestRevealBelongsToItsSession(t *testing.T) {
	const ok, see, forbid, nf = http.StatusOK, http.StatusSeeOther, http.StatusForbidden, http.StatusNotFound
	h := newHarness(t, publicURL)
	posted := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", As: "owner", Form: url.Values{"name": {"CI"}}})
	if posted.Status != see {
		t.Fatalf("POST: %d", posted.Status)
	}
	_, query, _ := strings.Cut(posted.location(), "?")
	for _, tt := range []struct {
		as, path string
		status   int
	}{
		{"admin", "/console/w/ws_a/settings/api-keys?" + query, ok},
		{"agent", "/console/w/ws_a/settings/api-keys?" + query, forbid},
		{"other", "/console/w/ws_a/settings/api-keys?" + query, nf},
		{"other", "/console/w/ws_b/settings/api-keys?" + query, ok},
		{"", "/console/w/ws_a/settings/api-keys?" + query, see},
		{"owner", "/console/w/ws_a/settings/integrations?" + query, ok},
		{"owner", "/console/w/ws_a/members?" + query, ok},
		{"owner", "/console/w/ws_a/settings/api-keys?shown=not-hex", ok},
		{"owner", "/console/w/ws_a/settings/api-keys?shown=" + strings.Repeat("0", 32), ok},
	} {
		r := h.do(t, req{Path: tt.path, As: tt.as})
		if r.Status != tt.status || shownSecret.MatchString(r.Body) {
			t.Fatalf("%s as %q: %d (want %d), or a secret is shown:\n%s", tt.path, tt.as, r.Status, tt.status, r.Body)
		}
		if r.Status == ok && !strings.Contains(r.Body, "This secret was shown once already") {
			t.Errorf("%s as %q: no explanation", tt.path, tt.as)
		}
	}
	// The integrations and members pages took the value (it was not
	// theirs: an id is shown on its own page only); make another and check
	// that the others' attempts above would not have spoilt it.
	posted = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", As: "owner", Form: url.Values{"name": {"CI 2"}}})
	for _, as := range []string{"admin", "other", ""} {
		h.do(t, req{Path: posted.location(), As: as})
	}
	if r := h.follow(t, posted, "owner"); !shownSecret.MatchString(r.Body) {
		t.Fatalf("the owner's own session does not see the secret after others tried:\n%s", r.Body)
	}
}

// The POSTs that make secrets need the CSRF token; refused, they make and
// store nothing.
func TestSecretsCSRF(t *testing.T) {
	for _, f := range secretFlows() {
		for _, tok := range []struct {
			name   string
			r      req
			header map[string]string
		}{
			{name: "no token", r: req{NoCSRF: true}},
			{name: "another session's token", r: req{CSRF: "csrf_agent"}},
			{name: "cross-origin", header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		} {
			t.Run(f.name+" "+tok.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedSettings(t)
				before := f.state(h)
				r := tok.r
				r.Method, r.Path, r.As, r.Form, r.Header = "POST", f.path, f.as, f.form, tok.header
				got := h.do(t, r)
				if got.Status != http.StatusForbidden || f.state(h) != before || h.once.puts() != 0 {
					t.Fatalf("status %d (want 403), state %s -> %s, %d stored", got.Status, before, f.state(h), h.once.puts())
				}
			})
		}
	}
}

// lockedBuffer collects log output from concurrent handlers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// No secret reaches the logs, at any level: not when it is made and shown,
// not when the one-time store fails after it was made (the page is a 503
// and the secret is lost, never shown in the clear or logged).
func TestSecretsNeverLogged(t *testing.T) {
	for _, f := range secretFlows() {
		t.Run(f.name, func(t *testing.T) {
			var logs lockedBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			h := newHarnessWith(t, publicURL, harnessOptions{log: log})
			h.seedSettings(t)
			var secrets []string
			shown := h.follow(t, h.do(t, req{Method: "POST", Path: f.path, As: f.as, Form: f.form}), f.as)
			if m := shownSecret.FindStringSubmatch(shown.Body); m != nil {
				secrets = append(secrets, html.UnescapeString(m[1]))
			} else {
				t.Fatalf("no secret shown:\n%s", shown.Body)
			}

			// The store fails after the secret was made, on a fresh
			// workspace (a second save of the integrations makes none).
			down := newHarnessWith(t, publicURL, harnessOptions{log: log})
			down.seedSettings(t)
			down.once.fail = domain.Unavailable("redis one-time store", errors.New("dial tcp 10.0.0.9:6379: connection refused"))
			r := down.do(t, req{Method: "POST", Path: f.path, As: f.as, Form: f.form})
			if r.Status != http.StatusServiceUnavailable || shownSecret.MatchString(r.Body) {
				t.Fatalf("store down: %d, or the secret is on the page:\n%s", r.Status, r.Body)
			}
			// What the failed POST made must not be in the logs either.
			for _, x := range []*harness{h, down} {
				secrets = append(secrets, x.settings.secrets["ws_a"].current, x.settings.integrations["ws_a"].signing)
				for _, k := range x.settings.keys["ws_a"] {
					secrets = append(secrets, k.Hash)
				}
				for tok := range x.accounts.invitations {
					secrets = append(secrets, tok)
				}
			}
			if logs.String() == "" {
				t.Fatal("nothing was logged: the 503 should be")
			}
			for _, s := range secrets {
				if s != "" && strings.Contains(logs.String(), s) {
					t.Fatalf("a secret (%.8s…) is in the logs:\n%s", s, logs.String())
				}
			}
		})
	}
}

// Without a one-time store, the pages that make secrets refuse (503)
// before making any: a secret that could not be shown is never made.
func TestSecretsWithoutStore(t *testing.T) {
	for _, f := range secretFlows() {
		t.Run(f.name, func(t *testing.T) {
			h := newHarnessWith(t, publicURL, harnessOptions{noReveals: true})
			h.seedSettings(t)
			before := f.state(h)
			r := h.do(t, req{Method: "POST", Path: f.path, As: f.as, Form: f.form})
			if r.Status != http.StatusServiceUnavailable || shownSecret.MatchString(r.Body) || f.state(h) != before {
				t.Fatalf("%d, state %s -> %s:\n%s", r.Status, before, f.state(h), r.Body)
			}
		})
	}
}

// The same journey on the real Redis adapter: the secret is shown once,
// and the key Redis holds expires by itself.
func TestSecretsShownOnceOnRedis(t *testing.T) {
	client, err := redisadapter.Connect(t.Context(), redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	h := newHarnessWith(t, publicURL, harnessOptions{reveals: redisadapter.NewOneTimeStore(client)})
	posted := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", As: "owner", Form: url.Values{"name": {"CI"}}})
	keys, err := client.Keys(t.Context(), redisadapter.OneTimeKeyPrefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("Redis keys %v, %v; want one", keys, err)
	}
	if ttl := client.TTL(t.Context(), keys[0]).Val(); ttl <= 0 || ttl > 5*time.Minute {
		t.Fatalf("TTL %v, want at most 5 minutes", ttl)
	}
	first := h.follow(t, posted, "owner")
	m := shownSecret.FindStringSubmatch(first.Body)
	if m == nil {
		t.Fatalf("no secret:\n%s", first.Body)
	}
	again := h.do(t, req{Path: posted.location(), As: "owner"})
	if strings.Contains(again.Body, m[1]) || !strings.Contains(again.Body, "This secret was shown once already") || len(h.settings.keys["ws_a"]) != 1 {
		t.Fatalf("reload:\n%s", again.Body)
	}
	if n := client.Exists(t.Context(), keys[0]).Val(); n != 0 {
		t.Fatal("the value is still in Redis after it was shown")
	}
}
