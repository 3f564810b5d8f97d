package queuemonitor_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/adapters/queuemonitor"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
)

const root = "/console/queues"

// newMonitor builds the monitor on a private Redis database holding one
// pending task whose payload carries a tenant's data.
func newMonitor(t *testing.T) (*queuemonitor.Monitor, string) {
	t.Helper()
	opt, err := asynq.ParseRedisURI(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	info, err := client.Enqueue(asynq.NewTask("inbound:process", []byte(`{"eventId":"evt_secret","message":"tenant A's secret order 4711"}`)), asynq.Queue("inbound"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := queuemonitor.New(opt, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, info.ID
}

func serve(m http.Handler, method, path string) (int, string) {
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestMonitorRedactsPayloads(t *testing.T) {
	m, id := newMonitor(t)
	for _, path := range []string{
		root + "/api/queues/inbound/pending_tasks",
		root + "/api/queues/inbound/tasks/" + id,
	} {
		t.Run(path, func(t *testing.T) {
			code, body := serve(m, http.MethodGet, path)
			if code != 200 || !strings.Contains(body, id) {
				t.Fatalf("GET: %d %s", code, body)
			}
			if strings.Contains(body, "4711") || strings.Contains(body, "evt_secret") {
				t.Fatalf("the payload shows: %s", body)
			}
			if !strings.Contains(body, "redacted") {
				t.Fatalf("no redaction notice: %s", body)
			}
		})
	}
}

func TestMonitorIsReadOnly(t *testing.T) {
	m, id := newMonitor(t)
	tests := []struct {
		method, path string
	}{
		{http.MethodDelete, root + "/api/queues/inbound/pending_tasks/" + id},
		{http.MethodPost, root + "/api/queues/inbound/pending_tasks/" + id + ":archive"},
		{http.MethodPost, root + "/api/queues/inbound:pause"},
		{http.MethodDelete, root + "/api/queues/inbound"},
		{http.MethodPut, root + "/api/queues/inbound"},
		{http.MethodPost, root + "/api/no/such/route"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if code, body := serve(m, tt.method, tt.path); code != http.StatusMethodNotAllowed {
				t.Fatalf("got %d %s", code, body)
			}
		})
	}
	// The task is still there, pending, and the queue not paused.
	code, body := serve(m, http.MethodGet, root+"/api/queues/inbound")
	if code != 200 || !strings.Contains(body, `"paused":false`) || !strings.Contains(body, `"pending":1`) {
		t.Fatalf("queue after the refused changes: %d %s", code, body)
	}
}

// TestMonitorPolicyAllowsItsInlineScripts: the page's inline scripts run
// under the monitor's policy (their hashes), and no other script may.
func TestMonitorPolicyAllowsItsInlineScripts(t *testing.T) {
	m, _ := newMonitor(t)
	code, page := serve(m, http.MethodGet, root)
	if code != 200 || !strings.Contains(page, root+"/static/js/") {
		t.Fatalf("page: %d %s", code, page)
	}
	csp := m.CSP()
	scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Fatal("no inline scripts")
	}
	for _, s := range scripts {
		sum := sha256.Sum256([]byte(s[1]))
		if !strings.Contains(csp, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
			t.Errorf("the policy lacks the hash of %.60q: %s", s[1], csp)
		}
	}
	for _, banned := range []string{"'unsafe-eval'", "script-src 'self' 'unsafe-inline'", "*"} {
		if strings.Contains(csp, banned) {
			t.Errorf("the policy allows %s: %s", banned, csp)
		}
	}
	if !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("the monitor may be framed: %s", csp)
	}
	// Nothing on the page or in the policy sends the operator's browser
	// to another host (asynqmon links Google Fonts; the page is served
	// without those links).
	for _, host := range []string{"fonts.googleapis.com", "fonts.gstatic.com", "https:"} {
		if strings.Contains(page, host) || strings.Contains(csp, host) {
			t.Errorf("%s is named by the page or the policy: %s\n%s", host, csp, page)
		}
	}
	if !strings.Contains(page, "<title>") || !strings.Contains(page, root+"/manifest.json") {
		t.Errorf("rewriting the page lost more than the font links: %s", page)
	}
}
