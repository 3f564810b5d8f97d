package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/domain"
)

// suggestedConv is the conversation of ws_a the fake drafts replies for.
const suggestedConv = "ses_00000000000000000000000042"

// fakeSuggestions drafts for suggestedConv in ws_a only, as the engine
// scopes conversations by workspace, and records the workspaces asked for.
type fakeSuggestions struct {
	mu    sync.Mutex
	calls []string // workspace id + "/" + conversation id
}

func newFakeSuggestions() *fakeSuggestions { return &fakeSuggestions{} }

func (f *fakeSuggestions) Suggest(_ context.Context, ws *domain.Workspace, id string) (chat.Suggestion, error) {
	f.mu.Lock()
	f.calls = append(f.calls, ws.ID+"/"+id)
	f.mu.Unlock()
	if ws.ID != "ws_a" || id != suggestedConv {
		return chat.Suggestion{}, domain.NotFound("conversation")
	}
	return chat.Suggestion{Draft: "Refunds are accepted within 30 days [1].", Citations: []domain.Citation{
		{DocumentName: "Refund policy", SourceID: "src_refunds", URL: "https://lumen.example/refunds"},
		{DocumentName: "Returns", SourceID: "src_returns"},
	}}, nil
}

func TestSuggestion(t *testing.T) {
	path := "/console/w/ws_a/inbox/" + suggestedConv + "/suggestion"
	fetch := map[string]string{"X-CSRF-Token": "csrf_agent", "Sec-Fetch-Site": "same-origin"}
	h := newHarness(t, publicURL)
	r := h.do(t, req{Method: "POST", Path: path, As: "agent", NoCSRF: true, Header: fetch})
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s:\n%s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"draft": "Refunds are accepted within 30 days [1].", "fallback": false,
		"citations": []any{
			map[string]any{"title": "Refund policy", "url": "https://lumen.example/refunds", "sourceId": "src_refunds"},
			map[string]any{"title": "Returns", "sourceId": "src_returns"},
		},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("body %s\nwant %s", g, w)
	}
	if len(h.suggestions.calls) != 1 || h.suggestions.calls[0] != "ws_a/"+suggestedConv {
		t.Fatalf("calls %v", h.suggestions.calls)
	}

	cases := []struct {
		name   string
		r      req
		status int
		code   string // the JSON error's code, when the body is JSON
	}{
		{"no CSRF token", req{Path: path, NoCSRF: true, Header: map[string]string{"Sec-Fetch-Site": "same-origin"}}, http.StatusForbidden, ""},
		{"wrong CSRF token", req{Path: path, NoCSRF: true, Header: map[string]string{"X-CSRF-Token": "csrf_owner"}}, http.StatusForbidden, ""},
		{"unknown conversation", req{Path: "/console/w/ws_a/inbox/ses_00000000000000000000000099/suggestion"}, http.StatusNotFound, "NOT_FOUND"},
		{"not a conversation id", req{Path: "/console/w/ws_a/inbox/nope/suggestion"}, http.StatusNotFound, "NOT_FOUND"},
		{"GET is not a route", req{Method: "GET", Path: path}, http.StatusNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			r := tc.r
			if r.Method == "" {
				r.Method = "POST"
			}
			r.As = "agent"
			if r.Header == nil {
				r.Header, r.NoCSRF = fetch, true
			}
			got := h.do(t, r)
			if got.Status != tc.status {
				t.Fatalf("%d, want %d:\n%s", got.Status, tc.status, got.Body)
			}
			if tc.code != "" && !strings.Contains(got.Body, `"code":"`+tc.code+`"`) {
				t.Fatalf("body is not the JSON error %s:\n%s", tc.code, got.Body)
			}
		})
	}

	// Tenant isolation: ws_b's member asking with ws_b's id for ws_a's
	// conversation reaches the engine for ws_b, which does not have it.
	h = newHarness(t, publicURL)
	r = h.do(t, req{Method: "POST", Path: "/console/w/ws_b/inbox/" + suggestedConv + "/suggestion", As: "other", NoCSRF: true,
		Header: map[string]string{"X-CSRF-Token": "csrf_other"}})
	if r.Status != http.StatusNotFound || len(h.suggestions.calls) != 1 || h.suggestions.calls[0] != "ws_b/"+suggestedConv {
		t.Fatalf("other workspace: %d, calls %v\n%s", r.Status, h.suggestions.calls, r.Body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
