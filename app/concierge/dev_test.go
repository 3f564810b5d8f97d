package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/config"
	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// startDev runs `concierge dev` until the test stops it and returns its banner.
func startDev(t *testing.T, env map[string]string) (banner string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"dev"}, func(k string) string { return env[k] }, &stdout, &stderr) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stdout.String(), "Press Ctrl+C") {
		select {
		case code := <-done:
			t.Fatalf("dev exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner after 30 s; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return stdout.String(), func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("dev exited with %d: %s", code, stderr.String())
		}
	}
}

func TestDevSeedsADemoWorkspaceOnce(t *testing.T) {
	addr := freeAddr(t)
	env := map[string]string{
		"CONCIERGE_DATABASE_URL": pgtest.NewEmptyDatabase(t),
		"CONCIERGE_REDIS_URL":    redistest.URL(t),
		"CONCIERGE_HTTP_ADDR":    addr,
		"CONCIERGE_LOG_LEVEL":    "warn",
	}
	keyPattern := regexp.MustCompile(`API key\s+(ck_live_[0-9a-z]+)`)
	get := func(banner, path string) string {
		t.Helper()
		m := keyPattern.FindStringSubmatch(banner)
		if m == nil {
			t.Fatalf("no API key in the banner:\n%s", banner)
		}
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+m[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s with the printed key: %d %s", path, resp.StatusCode, body)
		}
		return string(body)
	}

	banner, stop := startDev(t, env)
	for _, want := range []string{"http://" + addr, "whsec_", "curl", "support", "Console: http://" + addr + "/console",
		"sign in as " + demoOwnerEmail + " with the password " + demoOwnerPassword} {
		if !strings.Contains(banner, want) {
			t.Fatalf("banner lacks %q:\n%s", want, banner)
		}
	}
	// The banner names the demo widget's page, which serves it.
	widget := regexp.MustCompile(`http://\S+/chat/support\b`).FindString(banner)
	if widget == "" {
		t.Fatalf("banner lacks the widget's address:\n%s", banner)
	}
	if resp, err := http.Get(widget); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s = %v, %v", widget, resp, err)
	} else {
		resp.Body.Close()
	}
	first := get(banner, "/api/v2/agents")
	if strings.Count(first, `"slug"`) != 1 || !strings.Contains(first, `"slug":"support"`) {
		t.Fatalf("demo agents = %s", first)
	}
	// The demo agent falls back like any agent made through the API: zero
	// would answer whatever retrieval found.
	if !strings.Contains(first, `"retrievalThreshold":0.35`) {
		t.Fatalf("demo agent without the default threshold: %s", first)
	}
	// dev runs the worker too, which indexes the demo's sources.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		sources := get(banner, "/api/v2/agents/support/sources")
		if strings.Count(sources, `"status":"READY"`) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo sources = %s", sources)
		}
	}
	// The demo is what a new user tries first, with the questions of the
	// issues: it answers what its knowledge says, falls back on what it
	// does not ("How much is express delivery?": it says how long
	// express shipping takes, never its price).
	key := keyPattern.FindStringSubmatch(banner)[1]
	for _, tt := range []struct{ question, want string }{
		{"How long does shipping take?", "3 to 5 business days"},
		{"Is delivery free?", "free for orders over 50 euros"},
		{"Do you accept PayPal?", "PayPal"},
		{"Is express shipping available?", "express shipping takes 1 to 2 business days"},
		{"How much is express delivery?", ""},
		{"Do you ship to Canada?", ""},
		// Small talk is answered, not the fallback: a greeting with the
		// agent's welcome message.
		{"hi", "I'm Acme's assistant"},
		{"thanks!", "You're welcome"},
		{"are you a bot?", "AI assistant"},
		{"Can I talk to a human?", "a person from the team can take over"},
		// How-to questions get the step; two questions in one get both.
		{"How do I return an item?", "Start a return from the Orders page"},
		{"Do you accept credit cards?", "credit and debit cards"},
		{"How long does shipping take and how do I return an item?", "3 to 5 business days"},
	} {
		body, _ := json.Marshal(map[string]any{"agent": "support", "message": tt.question})
		req, _ := http.NewRequest("POST", "http://"+addr+"/api/v2/chat", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var reply struct {
			Message        string `json:"message"`
			IsFallback     bool   `json:"isFallback"`
			FallbackReason string `json:"fallbackReason"`
		}
		err = json.NewDecoder(resp.Body).Decode(&reply)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%q: %d %v", tt.question, resp.StatusCode, err)
		}
		if tt.want == "" && !reply.IsFallback || tt.want != "" && (reply.IsFallback || !strings.Contains(reply.Message, tt.want)) {
			t.Errorf("%q: %+v, want %q (\"\" for the fallback)", tt.question, reply, tt.want)
		}
	}
	stop()

	// A second start keeps the demo data and prints a new, working key.
	banner2, stop2 := startDev(t, env)
	defer stop2()
	if keyPattern.FindStringSubmatch(banner2)[1] == keyPattern.FindStringSubmatch(banner)[1] {
		t.Fatal("the second start printed the same key; stored keys are hashes and cannot be shown again")
	}
	if second := get(banner2, "/api/v2/agents"); strings.Count(second, `"slug"`) != 1 {
		t.Fatalf("the second start seeded again: %s", second)
	}

	// The printed owner signs in, owns the demo workspace, and exists once.
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	sys, err := connect(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.close()
	signed, err := sys.accounts.SignIn(context.Background(), account.SignInRequest{Email: demoOwnerEmail, Password: demoOwnerPassword, IP: "127.0.0.1"})
	if err != nil {
		t.Fatalf("signing in as the demo owner: %v", err)
	}
	ms, err := sys.accounts.Memberships(context.Background(), signed.User.ID)
	if err != nil || len(ms) != 1 || ms[0].WorkspaceID != demoWorkspaceID || ms[0].Role != domain.MemberOwner {
		t.Fatalf("demo owner memberships = %+v, %v", ms, err)
	}
	var users int64
	if err := sys.db.Gorm.Raw(`SELECT count(*) FROM users`).Scan(&users).Error; err != nil || users != 1 {
		t.Fatalf("%d users after two starts (%v), want 1", users, err)
	}
}

// TestDevServesMetrics: dev serves metrics on their own listener, says
// where in its banner, and points the operator to the queue monitor;
// "off" turns them off.
func TestDevServesMetrics(t *testing.T) {
	tests := []struct {
		name    string
		metrics string // CONCIERGE_METRICS_ADDR; "" for a free address
		want    string // in the banner
	}{
		{name: "on an address"},
		{name: "off", metrics: "off", want: "Metrics: not served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.metrics
			if addr == "" {
				addr = freeAddr(t)
				tt.want = "Metrics (Prometheus): http://" + addr + "/metrics"
			}
			env := map[string]string{
				"CONCIERGE_DATABASE_URL": pgtest.NewEmptyDatabase(t),
				"CONCIERGE_REDIS_URL":    redistest.URL(t),
				"CONCIERGE_HTTP_ADDR":    freeAddr(t),
				"CONCIERGE_LOG_LEVEL":    "warn",
				"CONCIERGE_METRICS_ADDR": addr,
			}
			banner, stop := startDev(t, env)
			defer stop()
			if !strings.Contains(banner, tt.want) || !strings.Contains(banner, "/console/queues") {
				t.Fatalf("banner lacks %q or the queue monitor:\n%s", tt.want, banner)
			}
			if tt.metrics == "off" {
				return
			}
			families := scrape(t, addr)
			if value(families, "concierge_ready", nil) != 1 || families["concierge_queue_tasks"] == nil {
				t.Fatalf("dev's metrics lack readiness or the queues: %v", families["concierge_ready"])
			}
		})
	}
}
