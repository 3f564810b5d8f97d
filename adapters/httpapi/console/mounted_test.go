package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi"
	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/workspace"
)

// The services the wiring will pass satisfy the console's interfaces.
var (
	_ console.Agents     = (*agent.Service)(nil)
	_ console.Workspaces = (*workspace.Service)(nil)
)

// httpapi.New mounts the console when it is given one, behind the edge's
// own middleware: request ids, access log, body limits.
func TestMountedByNew(t *testing.T) {
	accounts, agents := newFakeAccounts(), newFakeAgents()
	h, err := console.New(accounts, fakeWorkspaces{names: map[string]string{"ws_a": "Acme"}}, agents, console.Options{PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	app, err := httpapi.New(context.Background(), httpapi.Services{Console: h},
		httpapi.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		httpapi.Options{BodyLimitBytes: 1 << 20, LargeBodySlots: 1, LargeBodyWait: time.Second, PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, form url.Values) *http.Response {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		r := httptest.NewRequest(method, path, body)
		r.Host = "console.example"
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.AddCookie(&http.Cookie{Name: "__Host-concierge_session", Value: "cs_owner"})
		}
		res, err := app.Test(r, -1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	page := do("GET", "/console/sign-in", nil)
	if page.StatusCode != http.StatusOK || page.Header.Get("X-Request-Id") == "" || page.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("sign-in page: %d %v", page.StatusCode, page.Header)
	}
	missing := do("GET", "/console/nowhere", nil)
	if ct := missing.Header.Get("Content-Type"); missing.StatusCode != http.StatusNotFound || !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("unknown console page: %d %s", missing.StatusCode, ct)
	}
	// A 20,000-character prompt (80 KB in 4-byte characters) is over the
	// 4 KiB of body-less routes: console forms get the JSON limit.
	form := agentForm("long", "Long")
	form.Set("systemPrompt", strings.Repeat("😀", 20000))
	form.Set("csrf", "csrf_owner")
	if res := do("POST", "/console/w/ws_a/agents", form); res.StatusCode != http.StatusSeeOther {
		raw, _ := io.ReadAll(res.Body)
		t.Fatalf("a long prompt: %d\n%s", res.StatusCode, raw)
	}
	// The API's errors are still JSON.
	api := do("GET", "/api/v2/nowhere", nil)
	if ct := api.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("an API 404 as %s", ct)
	}
}
