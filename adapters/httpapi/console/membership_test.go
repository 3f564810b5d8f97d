package console_test

import (
	"net/http"
	"net/url"
	"testing"
)

// A member who is demoted or removed has the new rights on their very next
// request, on full pages, on the htmx fragment the knowledge page polls and
// on the playground's POST: the console reads the membership on every
// request (Workspace middleware) and caches nothing, not in a page and not
// in the session.
func TestDemotedOrRemovedMemberLosesAccessAtOnce(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	htmx := map[string]string{"HX-Request": "true"}
	routes := []struct {
		name   string
		r      req
		before int // as admin
		demote int // as agent
		remove int // as nobody in ws_a
	}{
		{"overview", req{Path: "/console/w/ws_a"}, http.StatusSeeOther, http.StatusSeeOther, http.StatusNotFound}, // agents, inbox
		{"settings", req{Path: "/console/w/ws_a/settings"}, http.StatusOK, http.StatusForbidden, http.StatusNotFound},
		{"members", req{Path: "/console/w/ws_a/members"}, http.StatusOK, http.StatusForbidden, http.StatusNotFound},
		{"polled sources fragment", req{Path: "/console/w/ws_a/agents/support/knowledge/list", Header: htmx}, http.StatusOK, http.StatusForbidden, http.StatusNotFound},
		{"conversations", req{Path: "/console/w/ws_a/conversations"}, http.StatusOK, http.StatusOK, http.StatusNotFound},
		{"playground question", req{Method: "POST", Path: "/console/w/ws_a/playground", Header: htmx,
			Form: url.Values{"agent": {"support"}, "question": {"How do refunds work?"}}}, http.StatusNoContent, http.StatusNoContent, http.StatusNotFound}, // answered, then HX-Redirect
		{"new API key", req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", Form: url.Values{"name": {"CI"}}},
			http.StatusSeeOther, http.StatusForbidden, http.StatusNotFound},
	}
	check := func(stage string, want func(int, int, int) int) {
		t.Helper()
		for _, rt := range routes {
			r := rt.r
			r.As = "admin"
			got := h.do(t, r)
			if w := want(rt.before, rt.demote, rt.remove); got.Status != w {
				t.Errorf("%s, %s: %d, want %d\n%s", stage, rt.name, got.Status, w, got.Body)
			}
		}
	}
	check("admin", func(b, _, _ int) int { return b })

	if r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/members/admin/role", As: "owner", Form: url.Values{"role": {"agent"}}}); r.Status != http.StatusSeeOther {
		t.Fatalf("demote: %d\n%s", r.Status, r.Body)
	}
	check("demoted to agent", func(_, d, _ int) int { return d })

	if r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/members/admin/remove", As: "owner"}); r.Status != http.StatusSeeOther {
		t.Fatalf("remove: %d\n%s", r.Status, r.Body)
	}
	check("removed", func(_, _, rm int) int { return rm })
}
