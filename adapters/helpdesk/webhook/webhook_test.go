package webhook_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/conciergehq/concierge/adapters/helpdesk/webhook"
	"github.com/conciergehq/concierge/adapters/safehttp"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)

// request is what a test receiver got.
type request struct {
	header http.Header
	body   []byte
	path   string
}

// receiver is an httptest server answering with reply and recording requests.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []request
	next func(w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{next: reply}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, request{header: r.Header.Clone(), body: body, path: r.URL.RequestURI()})
		rc.mu.Unlock()
		if rc.next != nil {
			rc.next(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.got...)
}

// newSender returns a sender for local receivers (the test-only relaxation on).
func newSender(t *testing.T, now func() time.Time) *webhook.Sender {
	t.Helper()
	s, err := webhook.New(webhook.Options{AllowPrivateAddresses: true, Timeout: 2 * time.Second, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func handoffDelivery() domain.Delivery {
	conv := domain.Conversation{
		ID: "ses_0000000000000000000000000a", WorkspaceID: "ws_0000000000000000000000000a", AgentID: "agt_0000000000000000000000000a",
		AgentSlug: "support", Channel: domain.ChannelChat, Status: domain.StatusHandoffRequested,
		ContactName: "Ada Lovelace", ContactEmail: "ada@example.com", CreatedAt: t0.Add(-time.Hour),
	}
	d := domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, t0)
	d.ID = "dlv_0000000000000000000000000a"
	d.Contact = &domain.HandoffContact{Name: "Ada Lovelace", Email: "ada@example.com", Note: "Invoice question"}
	d.Transcript = []domain.Message{
		{ID: "msg_0000000000000000000000000a", Role: domain.RoleUser, Content: "Where is my invoice?", CreatedAt: t0.Add(-2 * time.Minute)},
		{ID: "msg_0000000000000000000000000b", Role: domain.RoleAssistant, Content: "See billing.", CreatedAt: t0.Add(-time.Minute),
			Citations: []domain.Citation{{DocumentName: "Billing FAQ", SourceID: "src_0000000000000000000000000a", SourceType: domain.SourceQA, Snippet: "Invoices...", Score: 0.5}}},
	}
	return d
}

func TestBodyIsDeterministicAndDocumented(t *testing.T) {
	t.Parallel()
	d := handoffDelivery()
	b1, err := webhook.Body(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"handoff.requested","timestamp":"2026-11-21T10:00:00.123Z","data":{` +
		`"conversation":{"id":"ses_0000000000000000000000000a","agent":"support","channel":"CHAT","status":"HANDOFF_REQUESTED","verifiedUserId":null,"contactName":"Ada Lovelace","contactEmail":"ada@example.com","assigneeId":null,"createdAt":"2026-11-21T09:00:00.123Z"},` +
		`"contact":{"name":"Ada Lovelace","email":"ada@example.com","note":"Invoice question"},` +
		`"transcript":[{"id":"msg_0000000000000000000000000a","role":"USER","content":"Where is my invoice?","citations":[],"createdAt":"2026-11-21T09:58:00.123Z"},` +
		`{"id":"msg_0000000000000000000000000b","role":"ASSISTANT","content":"See billing.","citations":[{"documentName":"Billing FAQ","sourceId":"src_0000000000000000000000000a","sourceType":"qa","url":null,"snippet":"Invoices...","score":0.5}],"createdAt":"2026-11-21T09:59:00.123Z"}]}}`
	if string(b1) != want {
		t.Fatalf("body =\n%s\nwant\n%s", b1, want)
	}
	// A message event carries the message and no transcript.
	m := domain.Message{ID: "msg_0000000000000000000000000c", Role: domain.RoleHuman, Content: "On it", AuthorName: "Grace", CreatedAt: t0}
	d.Type, d.Message, d.Contact, d.Transcript = domain.EventMessageCreated, &m, nil, nil
	b2, err := webhook.Body(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b2), `"message":{"id":"msg_0000000000000000000000000c","role":"HUMAN","content":"On it","citations":[],"authorName":"Grace","createdAt":"2026-11-21T10:00:00.123Z"}}}`) ||
		strings.Contains(string(b2), "transcript") || strings.Contains(string(b2), `"contact":`) {
		t.Fatalf("message body = %s", b2)
	}
}

func TestDeliverSignsWithStandardWebhooks(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	secret := domain.NewSigningSecret()
	clock := t0
	var mu sync.Mutex
	s := newSender(t, func() time.Time { mu.Lock(); defer mu.Unlock(); return clock })
	d := handoffDelivery()
	to := ports.Endpoint{URL: rc.URL + "/hooks/concierge?tenant=acme", SigningSecret: secret}

	for i := range 2 {
		report, err := s.Deliver(context.Background(), to, d)
		if err != nil || report.StatusCode != http.StatusNoContent {
			t.Fatalf("attempt %d: report %+v, err %v", i+1, report, err)
		}
		mu.Lock()
		clock = clock.Add(90 * time.Second)
		mu.Unlock()
	}
	got := rc.requests()
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(got))
	}
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if err := verifier.VerifyIgnoringTimestamp(r.body, r.header); err != nil {
			t.Errorf("attempt %d: signature does not verify: %v", i+1, err)
		}
		if r.header.Get("webhook-id") != d.ID || r.header.Get("Idempotency-Key") != d.ID {
			t.Errorf("attempt %d: webhook-id %q, Idempotency-Key %q; want %s", i+1, r.header.Get("webhook-id"), r.header.Get("Idempotency-Key"), d.ID)
		}
		if want := strconv.FormatInt(t0.Add(time.Duration(i)*90*time.Second).Unix(), 10); r.header.Get("webhook-timestamp") != want {
			t.Errorf("attempt %d: webhook-timestamp %q, want %s (the attempt's time)", i+1, r.header.Get("webhook-timestamp"), want)
		}
		if r.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.header.Get("User-Agent"), "Concierge-Webhooks/") {
			t.Errorf("attempt %d: headers %v", i+1, r.header)
		}
		if r.path != "/hooks/concierge?tenant=acme" {
			t.Errorf("attempt %d: posted to %s", i+1, r.path)
		}
	}
	if string(got[0].body) != string(got[1].body) {
		t.Errorf("the body changed between attempts:\n%s\n%s", got[0].body, got[1].body)
	}
	if got[0].header.Get("webhook-signature") == got[1].header.Get("webhook-signature") {
		t.Error("two attempts at different times have the same signature")
	}
	// A wrong secret does not verify: the check above means something.
	other, _ := standardwebhooks.NewWebhook(domain.NewSigningSecret())
	if err := other.VerifyIgnoringTimestamp(got[0].body, got[0].header); err == nil {
		t.Error("the signature verifies under another secret")
	}
	// A live receiver checks the timestamp too: sign now and verify strictly.
	live := newSender(t, nil)
	if _, err := live.Deliver(context.Background(), to, d); err != nil {
		t.Fatal(err)
	}
	last := rc.requests()[2]
	if err := verifier.Verify(last.body, last.header); err != nil {
		t.Errorf("strict verification of a fresh delivery: %v", err)
	}
}

func TestDeliverMapsAnswers(t *testing.T) {
	t.Parallel()
	secret := domain.NewSigningSecret()
	tests := []struct {
		name       string
		reply      func(w http.ResponseWriter, r *http.Request)
		kind       error // nil: delivered
		code       int
		retryAfter time.Duration
	}{
		{"200", status(200), nil, 200, 0},
		{"202", status(202), nil, 202, 0},
		{"500", status(500), domain.ErrUnavailable, 500, 0},
		{"503 with Retry-After seconds", withRetryAfter(503, "7"), domain.ErrUnavailable, 503, 7 * time.Second},
		{"429 with Retry-After date", withRetryAfter(429, time.Now().Add(2*time.Minute).UTC().Format(http.TimeFormat)), domain.ErrUnavailable, 429, 2 * time.Minute},
		{"408", status(408), domain.ErrUnavailable, 408, 0},
		{"409", status(409), domain.ErrUnavailable, 409, 0},
		{"400", status(400), domain.ErrInvalidInput, 400, 0},
		{"401", status(401), domain.ErrInvalidInput, 401, 0},
		{"404", status(404), domain.ErrInvalidInput, 404, 0},
		{"410", status(410), domain.ErrInvalidInput, 410, 0},
		{"302 is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		}, domain.ErrInvalidInput, 302, 0},
		{"connection dropped", func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, domain.ErrUnavailable, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, tt.reply)
			s := newSender(t, nil)
			report, err := s.Deliver(context.Background(), ports.Endpoint{URL: rc.URL + "/in/tok_s3cr3t?key=qwerty", SigningSecret: secret}, handoffDelivery())
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("err = %v, want delivered", err)
				}
			} else if !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
			if report.StatusCode != tt.code {
				t.Errorf("status = %d, want %d", report.StatusCode, tt.code)
			}
			if tt.retryAfter > 0 && (report.RetryAfter < tt.retryAfter-2*time.Second || report.RetryAfter > tt.retryAfter) {
				t.Errorf("RetryAfter = %v, want about %v", report.RetryAfter, tt.retryAfter)
			}
			if err != nil {
				host := strings.TrimPrefix(rc.URL, "http://")
				for _, leak := range []string{"tok_s3cr3t", "qwerty", secret, "whsec_"} {
					if strings.Contains(err.Error(), leak) {
						t.Errorf("error %q leaks %q", err, leak)
					}
				}
				if !strings.Contains(err.Error(), host) {
					t.Errorf("error %q does not name the receiver %s", err, host)
				}
			}
			if n := len(rc.requests()); n != 1 {
				t.Errorf("receiver got %d requests, want 1", n)
			}
		})
	}
}

func TestDeliverTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { <-release })
	t.Cleanup(func() { close(release) })
	s, err := webhook.New(webhook.Options{AllowPrivateAddresses: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	report, err := s.Deliver(context.Background(), ports.Endpoint{URL: rc.URL, SigningSecret: domain.NewSigningSecret()}, handoffDelivery())
	if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 200ms") || report.StatusCode != 0 {
		t.Fatalf("report %+v, err %v; want a timeout", report, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestDeliverRefusesInternalAddressesWithoutTheTestRelaxation(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	var tlsHits atomic.Int64
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tlsHits.Add(1)
		w.WriteHeader(204)
	}))
	t.Cleanup(tls.Close)
	port := tls.Listener.Addr().(*net.TCPAddr).Port
	s, err := webhook.New(webhook.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := domain.NewSigningSecret()
	urls := map[string]string{
		"http loopback":           rc.URL,
		"https loopback literal":  "https://127.0.0.1:" + strconv.Itoa(port) + "/",
		"https localhost":         "https://localhost:" + strconv.Itoa(port) + "/",
		"https mapped IPv6":       "https://[::ffff:127.0.0.1]:" + strconv.Itoa(port) + "/",
		"https private":           "https://10.1.2.3/hook",
		"https metadata":          "https://169.254.169.254/latest",
		"https metadata by name":  "https://metadata.google.internal/",
		"https unspecified":       "https://0.0.0.0:" + strconv.Itoa(port) + "/",
		"https IPv6 loopback":     "https://[::1]:" + strconv.Itoa(port) + "/",
		"https unique-local IPv6": "https://[fd00::1]/",
	}
	if host, err := os.Hostname(); err == nil {
		// The machine's own name resolves (through /etc/hosts) to a
		// loopback or private address: only the dial-time check sees it.
		if addrs, err := net.LookupHost(host); err == nil && len(addrs) > 0 && allInternal(addrs) {
			urls["host name resolving inside"] = "https://" + host + ":" + strconv.Itoa(port) + "/"
		}
	}
	for name, u := range urls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := s.Deliver(context.Background(), ports.Endpoint{URL: u, SigningSecret: secret}, handoffDelivery())
			if !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("Deliver(%s) = %v, want a refusal (ErrInvalidInput)", u, err)
			}
		})
	}
	t.Cleanup(func() {
		if n := len(rc.requests()); n != 0 {
			t.Errorf("the loopback receiver got %d requests, want 0", n)
		}
		if n := tlsHits.Load(); n != 0 {
			t.Errorf("the loopback TLS receiver got %d requests, want 0", n)
		}
	})
}

func TestDeliverRefusesAMissingSecret(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s := newSender(t, nil)
	for _, secret := range []string{"", "whsec_", "whsec_not base64!", "sk_" + domain.NewSigningSecret()} {
		_, err := s.Deliver(context.Background(), ports.Endpoint{URL: rc.URL, SigningSecret: secret}, handoffDelivery())
		if !errors.Is(err, domain.ErrInvalidInput) || (secret != "" && strings.Contains(err.Error(), secret)) {
			t.Errorf("secret %q: err = %v, want a refusal that does not echo it", secret, err)
		}
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("unsigned deliveries reached the receiver: %d", n)
	}
}

func TestCheckReceiverURL(t *testing.T) {
	t.Parallel()
	strict, err := webhook.New(webhook.Options{})
	if err != nil {
		t.Fatal(err)
	}
	relaxed := newSender(t, nil)
	tests := []struct {
		name    string
		s       *webhook.Sender
		raw     string
		want    string // normalised URL; "" when refused
		wantErr string
	}{
		{"https", strict, "  https://Desk.Example.com/hooks/concierge?x=1 ", "https://Desk.Example.com/hooks/concierge?x=1", ""},
		{"https with port", strict, "HTTPS://desk.example.com:8443/in", "https://desk.example.com:8443/in", ""},
		{"http refused", strict, "http://desk.example.com/in", "", "helpdeskUrl: must use https"},
		{"http under the test relaxation", relaxed, "http://127.0.0.1:8080/in", "http://127.0.0.1:8080/in", ""},
		{"ftp", relaxed, "ftp://desk.example.com/in", "", "must use https"},
		{"relative", strict, "/hooks", "", "must be an absolute URL"},
		{"no host", strict, "https:///hooks", "", "must be an absolute URL"},
		{"opaque", strict, "https:desk.example.com", "", "must be an absolute URL"},
		{"user info", strict, "https://user:pw@desk.example.com/", "", "must not contain a user name or password"},
		{"fragment", strict, "https://desk.example.com/#x", "", "must not contain a fragment"},
		{"too long", strict, "https://desk.example.com/" + strings.Repeat("a", 2048), "", "must be at most 2048 characters"},
		{"bad port", strict, "https://desk.example.com:99999/", "", "the port is not valid"},
		{"loopback", strict, "https://127.0.0.1/", "", "helpdeskUrl: refused: 127.0.0.1 is a loopback address"},
		{"localhost", strict, "https://localhost:8443/", "", "refused: localhost is a loopback address"},
		{"sub.localhost", strict, "https://app.localhost/", "", "refused: app.localhost is a loopback address"},
		{"private", strict, "https://192.168.1.10/", "", "is a private address"},
		{"metadata", strict, "https://169.254.169.254/", "", "cloud metadata"},
		{"metadata name", strict, "https://metadata.google.internal/", "", "cloud metadata service"},
		{"IPv6 loopback", strict, "https://[::1]/", "", "is a loopback address"},
		{"empty", strict, "  ", "", "helpdeskUrl: is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.s.CheckReceiverURL("helpdeskUrl", tt.raw)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("CheckReceiverURL(%q) = %q, %v; want %q", tt.raw, got, err, tt.want)
				}
				return
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Fields["helpdeskUrl"] == "" {
				t.Fatalf("CheckReceiverURL(%q) = %q, %v; want a ValidationError on helpdeskUrl", tt.raw, got, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewRejectsOptionsOutOfRange(t *testing.T) {
	t.Parallel()
	for _, o := range []webhook.Options{{Timeout: -time.Second}, {Timeout: time.Minute}} {
		if _, err := webhook.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// allInternal reports whether every address is one the guard refuses.
func allInternal(addrs []string) bool {
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil || safehttp.Classify(ip) == "" {
			return false
		}
	}
	return true
}

func status(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

func withRetryAfter(code int, v string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", v)
		w.WriteHeader(code)
	}
}
