package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// SetAvailable makes the fake accounts the console's Availability: the
// membership the next page reads is the one changed.
func (f *fakeAccounts) SetAvailable(_ context.Context, actor domain.Member, available bool) (domain.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.members {
		if m.UserID == actor.UserID && m.WorkspaceID == actor.WorkspaceID {
			f.members[i].Available = available
			return f.members[i], nil
		}
	}
	return domain.Member{}, domain.NotFound("member")
}

func (f *fakeAccounts) available(userID, workspaceID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.UserID == userID && m.WorkspaceID == workspaceID {
			return m.Available
		}
	}
	return false
}

// The switch is in the header of every workspace page, for every role,
// with its state in aria-checked and in words; pressing it changes only
// the member's own availability and comes back to the page.
func TestAvailabilityToggle(t *testing.T) {
	for _, who := range []string{"owner", "admin", "agent"} {
		t.Run(who, func(t *testing.T) {
			h := newHarness(t, publicURL)
			page := "/console/w/ws_a/conversations?status=HUMAN"
			// An earlier outcome's notice is not shown again on coming back.
			r := h.do(t, req{Path: page + "&done=saved", As: who})
			if r.Status != http.StatusOK {
				t.Fatalf("page: %d\n%s", r.Status, r.Body)
			}
			for _, want := range []string{`action="/console/w/ws_a/availability"`, `role="switch"`, `aria-checked="false"`,
				`name="available" value="true"`, `name="next" value="/console/w/ws_a/conversations?status=HUMAN"`, "You are away."} {
				if !strings.Contains(r.Body, want) {
					t.Fatalf("the page lacks %q:\n%s", want, r.Body)
				}
			}
			r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/availability", As: who,
				Form: url.Values{"available": {"true"}, "next": {page}}})
			if r.Status != http.StatusSeeOther || r.location() != page {
				t.Fatalf("POST: %d to %q, want 303 back to %q\n%s", r.Status, r.location(), page, r.Body)
			}
			if !h.accounts.available(who, "ws_a") {
				t.Fatal("not available after saying so")
			}
			for _, other := range []string{"owner", "admin", "agent"} {
				if other != who && h.accounts.available(other, "ws_a") {
					t.Fatalf("%s's availability changed with %s's", other, who)
				}
			}
			r = h.follow(t, r, who)
			if !strings.Contains(r.Body, `aria-checked="true"`) || !strings.Contains(r.Body, "You are available.") ||
				!strings.Contains(r.Body, `name="available" value="false"`) {
				t.Fatalf("the page after the change does not show it:\n%s", r.Body)
			}
			r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/availability", As: who, Form: url.Values{"available": {"false"}, "next": {page}}})
			if r.Status != http.StatusSeeOther || h.accounts.available(who, "ws_a") {
				t.Fatalf("going away: %d, available %v", r.Status, h.accounts.available(who, "ws_a"))
			}
		})
	}
}

func TestAvailabilityRefusals(t *testing.T) {
	cases := []struct {
		name   string
		r      req
		status int
		body   string
	}{
		{"no value", req{Form: url.Values{}}, http.StatusBadRequest, "available: must be true or false"},
		{"not a boolean", req{Form: url.Values{"available": {"yes"}}}, http.StatusBadRequest, "available: must be true or false"},
		{"no CSRF token", req{Form: url.Values{"available": {"true"}}, NoCSRF: true}, http.StatusForbidden, "This form has expired"},
		{"another workspace", req{Path: "/console/w/ws_b/availability", Form: url.Values{"available": {"true"}}}, http.StatusNotFound, "There is nothing here"},
		{"cross-origin", req{Form: url.Values{"available": {"true"}}, Header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, http.StatusForbidden, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			r := tc.r
			r.Method, r.As = "POST", "agent"
			if r.Path == "" {
				r.Path = "/console/w/ws_a/availability"
			}
			got := h.do(t, r)
			if got.Status != tc.status || !strings.Contains(got.Body, tc.body) {
				t.Fatalf("%d, want %d with %q:\n%s", got.Status, tc.status, tc.body, got.Body)
			}
			if h.accounts.available("agent", "ws_a") || h.accounts.available("other", "ws_b") {
				t.Fatal("a refused request changed availability")
			}
		})
	}
}

// The switch returns only to a page of the same workspace: anything else
// (another site, another workspace, a path that could leave the console)
// goes to the workspace's overview.
func TestAvailabilityRedirect(t *testing.T) {
	home := "/console/w/ws_a/"
	for next, want := range map[string]string{
		"":                                    home,
		"/console/w/ws_a/conversations":       "/console/w/ws_a/conversations",
		"/console/w/ws_a/members?done=role":   "/console/w/ws_a/members?done=role",
		"/console/w/ws_a":                     "/console/w/ws_a",
		"/console/w/ws_b/agents":              home,
		"/console/w/ws_ab/agents":             home,
		"/console/account":                    home,
		"https://evil.example/console/w/ws_a": home,
		"//evil.example/console/w/ws_a/":      home,
		"/console/w/ws_a/%2F%2Fevil.example":  home,
		"/console/w/ws_a/../ws_b/agents":      home,
	} {
		h := newHarness(t, publicURL)
		r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/availability", As: "agent",
			Form: url.Values{"available": {"true"}, "next": {next}}})
		if r.Status != http.StatusSeeOther || r.location() != want {
			t.Errorf("next %q: %d to %q, want %q", next, r.Status, r.location(), want)
		}
	}
}
