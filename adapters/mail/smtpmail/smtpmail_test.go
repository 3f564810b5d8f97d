package smtpmail_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/mail/smtpmail"
	"github.com/conciergehq/concierge/core/domain"
)

// mailpit is one running mailpit process: a real SMTP server whose HTTP API
// shows what it received.
type mailpit struct {
	smtpAddr string
	apiURL   string
}

// startMailpit runs the pinned mailpit (scripts/mailpit.sh installs it into
// the user's cache directory; $MAILPIT_BIN overrides) on free loopback ports until the
// test ends. A missing install skips the test, except under CI, where it
// fails, so a broken setup cannot pass silently.
func startMailpit(t *testing.T, extra ...string) *mailpit {
	t.Helper()
	bin := mailpitBinary(t)
	var lastErr error
	for range 3 {
		smtpPort, httpPort := freePort(t), freePort(t)
		mp := &mailpit{smtpAddr: fmt.Sprintf("127.0.0.1:%d", smtpPort), apiURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort)}
		args := append([]string{"--smtp", mp.smtpAddr, "--listen", fmt.Sprintf("127.0.0.1:%d", httpPort),
			"--database", filepath.Join(t.TempDir(), "mailpit.db"), "--quiet", "--disable-version-check"}, extra...)
		cmd := exec.Command(bin, args...)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start mailpit: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if lastErr = mp.waitReady(exited); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			return mp
		}
		_ = cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%w; output:\n%s", lastErr, out.String())
	}
	t.Fatalf("mailpit did not start: %v", lastErr)
	return nil
}

// mailpitVersion must match scripts/mailpit.sh, which installs it.
const mailpitVersion = "v1.33.1"

func mailpitBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("MAILPIT_BIN")
	if bin == "" {
		dir := os.Getenv("MAILPIT_CACHE_DIR")
		if dir == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				t.Fatal(err)
			}
			dir = filepath.Join(cache, "concierge", "mailpit", mailpitVersion)
		}
		bin = filepath.Join(dir, "mailpit")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := "mailpit is not installed (" + bin + "): run `bash scripts/mailpit.sh` (or `make mailpit`)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (mp *mailpit) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("mailpit exited")
		default:
		}
		resp, err := http.Get(mp.apiURL + "/api/v1/messages")
		if err == nil {
			resp.Body.Close()
			if conn, err := net.DialTimeout("tcp", mp.smtpAddr, time.Second); err == nil {
				conn.Close()
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("mailpit did not answer within 20 s")
}

type address struct{ Name, Address string }

// message is what mailpit's API tells of one received message.
type message struct {
	ID      string
	From    address
	To      []address
	Cc, Bcc []address
	Subject string
	Text    string
	HTML    string
}

// messages reads every received message back over mailpit's HTTP API.
func (mp *mailpit) messages(t *testing.T) []message {
	t.Helper()
	var list struct{ Messages []message }
	mp.get(t, "/api/v1/messages", &list)
	out := make([]message, 0, len(list.Messages))
	for _, m := range list.Messages {
		var full message
		mp.get(t, "/api/v1/message/"+m.ID, &full)
		out = append(out, full)
	}
	return out
}

func (mp *mailpit) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(mp.apiURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSendThroughMailpit(t *testing.T) {
	t.Parallel()
	mp := startMailpit(t)
	m, err := smtpmail.New(smtpmail.Options{URL: "smtp://" + mp.smtpAddr, From: "Concierge <no-reply@concierge.test>"})
	if err != nil {
		t.Fatal(err)
	}
	link := "https://chat.example.com/console/invitations/lt_" + strings.Repeat("0123456789", 6)
	cases := []struct {
		name  string
		email domain.Email
		check func(t *testing.T, got message)
	}{
		{"text with a long link and non-ASCII", domain.Email{To: "Ada@Example.com", Subject: "Invitation à Concierge — équipe",
			Text: "Bonjour,\n\nAccept here:\n\n" + link + "\n"}, func(t *testing.T, got message) {
			if got.Subject != "Invitation à Concierge — équipe" {
				t.Errorf("subject = %q", got.Subject)
			}
			if !strings.Contains(got.Text, link) || !strings.Contains(got.Text, "Bonjour,") {
				t.Errorf("text = %q, want the link whole", got.Text)
			}
			if got.From.Address != "no-reply@concierge.test" || got.From.Name != "Concierge" {
				t.Errorf("from = %+v", got.From)
			}
		}},
		{"HTML alternative", domain.Email{To: "bob@example.com", Subject: "Reset", Text: "plain " + link, HTML: "<p>html <a href=\"" + link + "\">link</a></p>"},
			func(t *testing.T, got message) {
				if !strings.Contains(got.Text, "plain "+link) || !strings.Contains(got.HTML, `<a href="`+link+`">link</a>`) {
					t.Errorf("text %q, html %q", got.Text, got.HTML)
				}
			}},
		{"a subject cannot add headers", domain.Email{To: "carol@example.com", Subject: "Hi\r\nBcc: mallory@example.com", Text: "x"},
			func(t *testing.T, got message) {
				if len(got.Bcc) != 0 || len(got.Cc) != 0 || len(got.To) != 1 || !strings.Contains(got.Subject, "Bcc: mallory@example.com") {
					t.Errorf("header injection: %+v", got)
				}
			}},
	}
	for _, tc := range cases {
		if err := m.Send(ctxT(t), tc.email); err != nil {
			t.Fatalf("%s: Send: %v", tc.name, err)
		}
	}
	got := mp.messages(t)
	if len(got) != len(cases) {
		t.Fatalf("mailpit received %d messages, want %d", len(got), len(cases))
	}
	for _, tc := range cases {
		want, _ := domain.NormalizeEmail(tc.email.To)
		found := false
		for _, g := range got {
			if len(g.To) == 1 && g.To[0].Address == want {
				found = true
				t.Run(tc.name, func(t *testing.T) { tc.check(t, g) })
			}
		}
		if !found {
			t.Errorf("%s: no message to %s", tc.name, want)
		}
	}
}

func TestSendWithStartTLSAndAuthentication(t *testing.T) {
	t.Parallel()
	certFile, keyFile, pool := selfSignedCert(t)
	mp := startMailpit(t, "--smtp-tls-cert", certFile, "--smtp-tls-key", keyFile, "--smtp-require-starttls", "--smtp-auth-accept-any")

	trusting, err := smtpmail.New(smtpmail.Options{URL: "smtp://user:s3cret@" + mp.smtpAddr, From: "no-reply@concierge.test",
		TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, RequireTLS: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := trusting.Send(ctxT(t), domain.Email{To: "ada@example.com", Subject: "Over TLS", Text: "hello"}); err != nil {
		t.Fatalf("Send over STARTTLS: %v", err)
	}
	// The default configuration does not trust the self-signed certificate:
	// STARTTLS is verified, never silently downgraded.
	untrusting, err := smtpmail.New(smtpmail.Options{URL: "smtp://user:s3cret@" + mp.smtpAddr, From: "no-reply@concierge.test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := untrusting.Send(ctxT(t), domain.Email{To: "bob@example.com", Subject: "x", Text: "x"}); !errors.Is(err, domain.ErrUnavailable) ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Send with an untrusted certificate = %v, want ErrUnavailable naming the certificate", err)
	}
	got := mp.messages(t)
	if len(got) != 1 || got[0].Subject != "Over TLS" || got[0].To[0].Address != "ada@example.com" {
		t.Fatalf("received %+v", got)
	}
}

func TestSendRequiringTLSRefusesAPlainServer(t *testing.T) {
	t.Parallel()
	mp := startMailpit(t)
	m, err := smtpmail.New(smtpmail.Options{URL: "smtp://" + mp.smtpAddr, From: "no-reply@concierge.test", RequireTLS: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Send(ctxT(t), domain.Email{To: "ada@example.com", Subject: "x", Text: "x"}); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Send = %v, want ErrUnavailable", err)
	}
	if got := mp.messages(t); len(got) != 0 {
		t.Fatalf("a message went out in the clear: %+v", got)
	}
}

func TestBadInputAndUnreachableServer(t *testing.T) {
	t.Parallel()
	for _, o := range []smtpmail.Options{
		{URL: "http://mail.example.com", From: "a@example.com"},
		{URL: "smtp://", From: "a@example.com"},
		{URL: "smtp://mail.example.com", From: "not an address"},
	} {
		if _, err := smtpmail.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
	m, err := smtpmail.New(smtpmail.Options{URL: fmt.Sprintf("smtp://127.0.0.1:%d", freePort(t)), From: "a@example.com", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Send(ctxT(t), domain.Email{To: "not an address", Subject: "x", Text: "x"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("bad recipient: %v, want ErrInvalidInput", err)
	}
	if err := m.Send(ctxT(t), domain.Email{To: "ada@example.com", Subject: "", Text: "x"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("no subject: %v, want ErrInvalidInput", err)
	}
	if err := m.Send(ctxT(t), domain.Email{To: "ada@example.com", Subject: "x", Text: "x"}); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("nothing listening: %v, want ErrUnavailable", err)
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, and returns
// a pool trusting it.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailpit test"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
