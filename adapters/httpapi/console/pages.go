package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
)

// view is what every page template gets: who is signed in, where, the CSRF
// token for its forms, a notice, and the page's own data.
type view struct {
	Title string
	// CSRF is the session's token, put in every form and in the meta tag
	// console.js gives htmx; "" on public pages.
	CSRF string
	// User is set when signed in.
	User *domain.User
	// Member is the membership the page acts as, in Workspace.
	Member    *domain.Member
	Workspace *domain.Workspace
	// Switch lists the user's other workspaces (the switcher), when any.
	Switch []workspaceLink
	// Nav names the active navigation entry.
	Nav string
	// Queues shows the link to the queue monitor: on the operator
	// workspace's pages, to its owners, when a monitor is mounted (the
	// same rule Queues enforces on every request).
	Queues bool
	// Here is the page's own URL (path and query) when it was reached by
	// GET: where the header's forms (the availability toggle) return.
	Here string
	// Notice is a text from the string table shown in a live region.
	Notice string
	// Error is a message above the form; Fields holds per-field messages.
	Error  string
	Fields map[string]string
	Data   any
}

type workspaceLink struct {
	ID, Name string
	Role     domain.MemberRole
}

// Can reports whether the page's member has the permission, for showing
// only what they may use (the server checks again on every request). A
// permission the domain does not name fails the page, so a typo in a
// template cannot hide a link quietly.
func (v *view) Can(p string) (bool, error) {
	if !domain.MemberOwner.Can(domain.Permission(p)) {
		return false, fmt.Errorf("console: no permission %q", p)
	}
	return v.Member != nil && v.Member.Role.Can(domain.Permission(p)), nil
}

// WS is the URL prefix of the page's workspace.
func (v *view) WS() string {
	if v.Member == nil {
		return Prefix
	}
	return Prefix + "/w/" + v.Member.WorkspaceID
}

// notices are the outcomes a redirect may announce with ?done=: only these
// keys are shown, so the query cannot put text on the page.
var notices = map[string]string{
	"created": "agents.created", "saved": "agents.saved", "published": "agents.publishedmsg",
	"unpublished": "agents.unpublishedmsg", "deleted": "agents.deleted", "revoked": "members.revoked",
	"role": "members.role.done", "removed": "members.removed", "password": "account.pw.done",
	"others": "account.others.done", "signedout": "signedout", "reset": "reset.done",
	// Settings
	"keyrevoked": "keys.revoked", "integrations": "integrations.saved", "retried": "delivery.retried",
	"autoassignon": "autoassign.done.on", "autoassignoff": "autoassign.done.off",
	// Knowledge
	"source": "knowledge.added", "files": "knowledge.filesadded", "reindex": "knowledge.reindexing",
	"sourcedeleted": "knowledge.deleted",
	// Inbox
	"sent": "inbox.done.sent", "noted": "inbox.done.noted", "taken": "inbox.done.taken", "assigned": "inbox.done.assigned",
	"unassigned": "inbox.done.unassigned", "resolved": "inbox.done.resolved", "reopened": "inbox.done.reopened",
	"handedback": "inbox.done.handedback",
	// Saved replies
	"replycreated": "replies.created", "replysaved": "replies.saved", "replydeleted": "replies.deleted",
	// Unanswered questions
	"topicanswered": "unanswered.done.answered", "improved": "unanswered.done.improved",
}

// newView builds the view of a signed-in page; inside a workspace it
// includes the workspace and the switcher.
func (h *Handlers) newView(c *fiber.Ctx, title, nav string) (*view, error) {
	p := principal(c)
	v := &view{Title: title, Nav: nav, CSRF: p.Session.CSRFToken, User: &p.User}
	if c.Method() == fiber.MethodGet {
		v.Here = here(c.OriginalURL())
	}
	if key, ok := notices[c.Query("done")]; ok {
		v.Notice = mustText(key)
	}
	if m := member(c); m.WorkspaceID != "" {
		v.Member = &m
		v.Queues = h.queues != nil && h.operatorWorkspace != "" && m.WorkspaceID == h.operatorWorkspace && m.Role == domain.MemberOwner
		ws, err := h.workspaces.GetWorkspace(c.UserContext(), m.WorkspaceID)
		if err != nil {
			return nil, err
		}
		v.Workspace = &ws
		links, err := h.workspaceLinks(c.UserContext(), p.User.ID)
		if err != nil {
			return nil, err
		}
		if len(links) > 1 {
			v.Switch = links
		}
	}
	return v, nil
}

// here is a page's URL to come back to: without ?done=, whose notice was
// about what happened before.
func here(original string) string {
	u, err := url.Parse(original)
	if err != nil {
		return ""
	}
	q := u.Query()
	if !q.Has("done") {
		return strings.Clone(original)
	}
	q.Del("done")
	u.RawQuery = q.Encode()
	return u.String()
}

// workspaceLinks lists the user's workspaces by name.
func (h *Handlers) workspaceLinks(ctx context.Context, userID string) ([]workspaceLink, error) {
	ms, err := h.accounts.Memberships(ctx, userID)
	if err != nil {
		return nil, err
	}
	links := make([]workspaceLink, 0, len(ms))
	for _, m := range ms {
		ws, err := h.workspaces.GetWorkspace(ctx, m.WorkspaceID)
		if errors.Is(err, domain.ErrNotFound) {
			continue // deleted since; nothing to link to
		}
		if err != nil {
			return nil, err
		}
		links = append(links, workspaceLink{ID: m.WorkspaceID, Name: ws.Name, Role: m.Role})
	}
	sort.SliceStable(links, func(i, j int) bool { return links[i].Name < links[j].Name })
	return links, nil
}

// formError turns a validation error into the view's messages, for
// showing the form again; other errors are returned as they are.
func formError(v *view, err error) error {
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		var cf *domain.ConflictError
		if errors.As(err, &cf) {
			v.Error = cf.Message
			return nil
		}
		return err
	}
	v.Error = mustText("form.problems")
	v.Fields = verr.Fields
	if len(verr.Fields) == 0 {
		v.Error = verr.Message
	}
	return nil
}

// errorPage renders an error the ErrorHandler has mapped: the status it
// chose, and a message from the string table or the error's public text.
func (h *Handlers) errorPage(c *fiber.Ctx, status int, body wire.ErrorBody) error {
	msg := body.Error.Message
	switch status {
	case http.StatusNotFound:
		msg = mustText("err.notfound")
	case http.StatusForbidden:
		if msg == "" {
			msg = mustText("err.forbidden0")
		}
	case http.StatusTooManyRequests:
		msg = mustText("err.limited", retryAfter(c))
	case http.StatusRequestEntityTooLarge:
		msg = mustText("err.toolarge")
	case http.StatusServiceUnavailable:
		msg = mustText("err.unavailable")
	case http.StatusMethodNotAllowed, http.StatusBadRequest, http.StatusConflict, http.StatusUnauthorized:
	default:
		if status >= 500 {
			msg = mustText("err.internal", string(c.Response().Header.Peek("X-Request-Id")))
		}
	}
	v := &view{Title: mustText("err.title"), Error: msg}
	if p := principal(c); p.User.ID != "" {
		v.User = &p.User
		v.CSRF = p.Session.CSRFToken
	}
	return h.render(c, status, "error", v)
}

func retryAfter(c *fiber.Ctx) int {
	n := 0
	for _, b := range c.Response().Header.Peek(fiber.HeaderRetryAfter) {
		if b < '0' || b > '9' {
			break
		}
		n = n*10 + int(b-'0')
	}
	return max(n, 1)
}

func isConflict(err error) bool { return errors.Is(err, domain.ErrConflict) }
