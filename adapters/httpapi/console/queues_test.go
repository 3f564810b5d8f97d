package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// fakeMonitor stands for the queue monitor (adapters/queuemonitor, tested
// there against Redis): what is checked here is who reaches it.
type fakeMonitor struct{ calls int }

func (f *fakeMonitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls++
	if r.Method != http.MethodGet {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	_, _ = w.Write([]byte("queue monitor at " + r.URL.Path))
}

func (f *fakeMonitor) CSP() string { return "script-src 'self' 'sha256-test'" }

func TestQueueMonitorRoleMatrix(t *testing.T) {
	type want = roleStatuses
	// The operator's workspace is ws_a: only its owner sees the monitor;
	// its admin and agent, and the owner of ws_b, get not-found.
	only := want{owner: 200, admin: 404, agent: 404, other: 404, out: 303}
	for _, path := range []string{"/console/queues", "/console/queues/", "/console/queues/api/queues", "/console/queues/static/js/main.js"} {
		for _, rc := range only.roles() {
			t.Run(path+"/"+rc.name, func(t *testing.T) {
				mon := &fakeMonitor{}
				h := newHarnessWith(t, publicURL, harnessOptions{queues: mon, operator: "ws_a"})
				r := h.do(t, req{Path: path, As: rc.as})
				if r.Status != rc.want {
					t.Fatalf("got %d, want %d:\n%s", r.Status, rc.want, r.Body)
				}
				if reached := mon.calls > 0; reached != (rc.want == 200) {
					t.Fatalf("monitor reached: %v", reached)
				}
				if rc.want == 200 {
					if !strings.Contains(r.Body, "queue monitor at "+path) {
						t.Fatalf("body: %s", r.Body)
					}
					if got := r.Header.Values("Content-Security-Policy"); len(got) != 1 || got[0] != mon.CSP() {
						t.Fatalf("CSP = %q, want only the monitor's", got)
					}
				}
			})
		}
	}
}

func TestQueueMonitorOffWithoutOperatorOrMonitor(t *testing.T) {
	tests := []struct {
		name     string
		monitor  bool
		operator string
	}{
		{"no operator workspace", true, ""},
		{"no monitor", false, "ws_a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := harnessOptions{operator: tt.operator}
			mon := &fakeMonitor{}
			if tt.monitor {
				o.queues = mon
			}
			h := newHarnessWith(t, publicURL, o)
			if r := h.do(t, req{Path: "/console/queues", As: "owner"}); r.Status != 404 || mon.calls != 0 {
				t.Fatalf("got %d, monitor called %d times", r.Status, mon.calls)
			}
		})
	}
}

// TestQueueMonitorChangesAreRefused: a state-changing request needs the
// session's CSRF token before it gets anywhere, and the monitor refuses
// it even with one.
func TestQueueMonitorChangesAreRefused(t *testing.T) {
	tests := []struct {
		name   string
		method string
		noCSRF bool
		want   int
	}{
		{"POST without the CSRF token", http.MethodPost, true, 403},
		{"DELETE without the CSRF token", http.MethodDelete, true, 403},
		{"POST with the token, refused by the read-only monitor", http.MethodPost, false, 405},
		{"DELETE with the token, refused by the read-only monitor", http.MethodDelete, false, 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mon := &fakeMonitor{}
			h := newHarnessWith(t, publicURL, harnessOptions{queues: mon, operator: "ws_a"})
			r := h.do(t, req{Method: tt.method, Path: "/console/queues/api/queues/inbound:pause", As: "owner", NoCSRF: tt.noCSRF})
			if r.Status != tt.want {
				t.Fatalf("got %d, want %d: %s", r.Status, tt.want, r.Body)
			}
		})
	}
}

// TestQueueMonitorLink: the side navigation links to the monitor exactly
// where following the link would work (the operator workspace's owner, a
// monitor mounted), and nowhere else, so nobody is shown a link to a
// not-found page.
func TestQueueMonitorLink(t *testing.T) {
	const link = `href="/console/queues/"`
	tests := []struct {
		name     string
		as       string
		path     string
		monitor  bool
		operator string
		want     bool
	}{
		{"operator workspace's owner", "owner", "/console/w/ws_a/reports", true, "ws_a", true},
		{"operator workspace's admin", "admin", "/console/w/ws_a/reports", true, "ws_a", false},
		{"operator workspace's agent", "agent", "/console/w/ws_a/reports", true, "ws_a", false},
		{"owner of another workspace", "other", "/console/w/ws_b/reports", true, "ws_a", false},
		{"owner, no operator workspace", "owner", "/console/w/ws_a/reports", true, "", false},
		{"owner, no monitor", "owner", "/console/w/ws_a/reports", false, "ws_a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := harnessOptions{operator: tt.operator}
			if tt.monitor {
				o.queues = &fakeMonitor{}
			}
			h := newHarnessWith(t, publicURL, o)
			r := h.do(t, req{Path: tt.path, As: tt.as})
			if r.Status != 200 {
				t.Fatalf("got %d: %s", r.Status, r.Body)
			}
			if got := strings.Contains(r.Body, link); got != tt.want {
				t.Fatalf("link shown: %v, want %v", got, tt.want)
			}
		})
	}
}
