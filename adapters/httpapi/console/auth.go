package console

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// publicView is the view of a page for people not signed in.
func publicView(c *fiber.Ctx, title string) *view {
	v := &view{Title: title}
	if key, ok := notices[c.Query("done")]; ok {
		v.Notice = mustText(key)
	}
	return v
}

type signInData struct{ Email, Next string }

// SignInPage shows the sign-in form. next, where to go afterwards, is
// kept only when it is a console path (safeNext).
func (h *Handlers) SignInPage(c *fiber.Ctx) error {
	next := safeNext(c.Query("next"))
	if token := c.Cookies(h.cookieName); token != "" {
		// Already signed in: go on instead of asking again.
		if _, err := h.accounts.Authenticate(c.UserContext(), token); err == nil {
			return redirect(c, next)
		}
	}
	v := publicView(c, mustText("signin.title"))
	v.Data = signInData{Next: next}
	return h.render(c, fiber.StatusOK, "signin", v)
}

// SignIn checks the form and starts a new session: the service makes a new
// token, so a token planted before sign-in is never the one signed in, and
// a session this browser still had is ended.
func (h *Handlers) SignIn(c *fiber.Ctx) error {
	email := formValue(c, "email")
	next := safeNext(c.FormValue("next"))
	v := publicView(c, mustText("signin.title"))
	v.Data = signInData{Email: email, Next: next}
	in, err := h.accounts.SignIn(c.UserContext(), account.SignInRequest{
		Email: email, Password: c.FormValue("password"), IP: c.IP(), UserAgent: strings.Clone(c.Get(fiber.HeaderUserAgent)),
	})
	var rl *domain.RateLimitError
	switch {
	case errors.Is(err, domain.ErrUnauthorized):
		v.Error = mustText("signin.failed")
		return h.render(c, fiber.StatusUnauthorized, "signin", v)
	case errors.As(err, &rl):
		c.Set(fiber.HeaderRetryAfter, itoa(rl.RetryAfterSeconds))
		v.Error = mustText("signin.limited", rl.RetryAfterSeconds)
		return h.render(c, fiber.StatusTooManyRequests, "signin", v)
	case err != nil:
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "signin", v)
	}
	h.replaceSession(c, in)
	return redirect(c, next)
}

// replaceSession ends the session the browser held, if any, and sets the
// cookie of the new one.
func (h *Handlers) replaceSession(c *fiber.Ctx, in account.SignedIn) {
	if old := c.Cookies(h.cookieName); old != "" && old != in.Token {
		if err := h.accounts.SignOut(c.UserContext(), old); err != nil {
			h.log.WarnContext(c.UserContext(), "console: ending the previous session failed", "error", err)
		}
	}
	h.setCookie(c, in.Token, in.Session.ExpiresAt)
}

// SignOut ends this session and forgets its cookie.
func (h *Handlers) SignOut(c *fiber.Ctx) error {
	if err := h.accounts.SignOut(c.UserContext(), sessionToken(c)); err != nil {
		return err
	}
	h.clearCookie(c)
	return redirect(c, Prefix+"/sign-in?done=signedout")
}

// ResetRequestPage asks for the email to send a reset link to.
func (h *Handlers) ResetRequestPage(c *fiber.Ctx) error {
	return h.render(c, fiber.StatusOK, "reset-request", publicView(c, mustText("reset.title")))
}

// ResetRequest sends a reset link when the email has an account. The page
// says the same either way, so it does not tell who has an account.
func (h *Handlers) ResetRequest(c *fiber.Ctx) error {
	v := publicView(c, mustText("reset.title"))
	err := h.accounts.RequestReset(c.UserContext(), formValue(c, "email"), c.IP())
	var rl *domain.RateLimitError
	switch {
	case errors.As(err, &rl):
		c.Set(fiber.HeaderRetryAfter, itoa(rl.RetryAfterSeconds))
		v.Error = mustText("err.limited", rl.RetryAfterSeconds)
		return h.render(c, fiber.StatusTooManyRequests, "reset-request", v)
	case err != nil:
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "reset-request", v)
	}
	v.Notice = mustText("reset.sent")
	return h.render(c, fiber.StatusOK, "reset-request", v)
}

type tokenData struct{ Token string }

// ResetPage asks for the new password of a reset link.
func (h *Handlers) ResetPage(c *fiber.Ctx) error {
	v := publicView(c, mustText("reset.set.title"))
	v.Data = tokenData{Token: c.Params("token")}
	return h.render(c, fiber.StatusOK, "reset", v)
}

// Reset sets the new password; the link then stops working.
func (h *Handlers) Reset(c *fiber.Ctx) error {
	v := publicView(c, mustText("reset.set.title"))
	v.Data = tokenData{Token: strings.Clone(c.Params("token"))}
	err := h.accounts.ResetPassword(c.UserContext(), account.ResetRequest{Token: c.Params("token"), Password: c.FormValue("password")})
	switch {
	case errors.Is(err, domain.ErrNotFound):
		v.Error = mustText("link.bad")
		v.Data = nil
		return h.render(c, fiber.StatusNotFound, "reset", v)
	case err != nil:
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "reset", v)
	}
	return redirect(c, Prefix+"/sign-in?done=reset")
}

type invitationData struct {
	Token, WorkspaceID, Workspace, Email, Name string
	Role                                       domain.MemberRole
}

// InvitationPage shows an invitation with the form to accept it.
func (h *Handlers) InvitationPage(c *fiber.Ctx) error {
	v, status, err := h.invitationView(c)
	if err != nil {
		return err
	}
	return h.render(c, status, "invitation", v)
}

func (h *Handlers) invitationView(c *fiber.Ctx) (*view, int, error) {
	token := strings.Clone(c.Params("token"))
	inv, err := h.accounts.InvitationByToken(c.UserContext(), token)
	if errors.Is(err, domain.ErrNotFound) {
		v := publicView(c, mustText("err.title"))
		v.Error = mustText("link.bad")
		return v, fiber.StatusNotFound, nil
	}
	if err != nil {
		return nil, 0, err
	}
	ws, err := h.workspaces.GetWorkspace(c.UserContext(), inv.WorkspaceID)
	if err != nil {
		return nil, 0, err
	}
	v := publicView(c, mustText("invite.title", ws.Name))
	v.Data = invitationData{Token: token, WorkspaceID: inv.WorkspaceID, Workspace: ws.Name, Email: inv.Email, Role: inv.Role}
	return v, fiber.StatusOK, nil
}

// AcceptInvitation accepts the invitation and signs the person in with a
// new session.
func (h *Handlers) AcceptInvitation(c *fiber.Ctx) error {
	v, status, err := h.invitationView(c)
	if err != nil {
		return err
	}
	if status != fiber.StatusOK {
		return h.render(c, status, "invitation", v)
	}
	d := v.Data.(invitationData)
	d.Name = formValue(c, "name")
	v.Data = d
	in, err := h.accounts.AcceptInvitation(c.UserContext(), account.AcceptRequest{
		Token: d.Token, Name: d.Name, Password: c.FormValue("password"),
		IP: c.IP(), UserAgent: strings.Clone(c.Get(fiber.HeaderUserAgent)),
	})
	switch {
	case errors.Is(err, domain.ErrUnauthorized):
		v.Error = mustText("invite.wrongpass")
		return h.render(c, fiber.StatusUnauthorized, "invitation", v)
	case errors.Is(err, domain.ErrNotFound):
		v.Error = mustText("link.bad")
		v.Data = nil
		return h.render(c, fiber.StatusNotFound, "invitation", v)
	case err != nil:
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "invitation", v)
	}
	h.replaceSession(c, in)
	return redirect(c, Prefix+"/w/"+d.WorkspaceID)
}

// Home sends the user to their workspace, or lets them pick one.
func (h *Handlers) Home(c *fiber.Ctx) error {
	links, err := h.workspaceLinks(c.UserContext(), principal(c).User.ID)
	if err != nil {
		return err
	}
	if len(links) == 1 {
		return redirect(c, Prefix+"/w/"+links[0].ID)
	}
	v, err := h.newView(c, mustText("picker.title"), "")
	if err != nil {
		return err
	}
	v.Data = links
	return h.render(c, fiber.StatusOK, "picker", v)
}

// Overview is a workspace's first page: agents for those who manage them,
// the inbox for helpers (the agent role), who answer conversations.
func (h *Handlers) Overview(c *fiber.Ctx) error {
	m := member(c)
	if m.Role.Can(domain.PermAgents) {
		return redirect(c, Prefix+"/w/"+m.WorkspaceID+"/agents")
	}
	if m.Role.Can(domain.PermConversations) && h.inbox != nil {
		return redirect(c, Prefix+"/w/"+m.WorkspaceID+"/inbox")
	}
	v, err := h.newView(c, mustText("home.title"), "")
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "overview", v)
}

type accountData struct {
	Sessions  []account.Session
	CurrentID string
}

// AccountPage shows the password form and the user's sessions.
func (h *Handlers) AccountPage(c *fiber.Ctx) error {
	v, err := h.accountView(c)
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "account", v)
}

func (h *Handlers) accountView(c *fiber.Ctx) (*view, error) {
	v, err := h.newView(c, mustText("account.title"), "account")
	if err != nil {
		return nil, err
	}
	p := principal(c)
	ss, err := h.accounts.Sessions(c.UserContext(), p.User.ID)
	if err != nil {
		return nil, err
	}
	v.Data = accountData{Sessions: ss, CurrentID: p.Session.ID}
	return v, nil
}

// ChangePassword changes the signed-in user's password. A current password
// left empty or wrong is said on its field, as is a new one the service
// refuses.
func (h *Handlers) ChangePassword(c *fiber.Ctx) error {
	current := c.FormValue("current")
	var err error
	if current == "" {
		err = domain.InvalidField("current", mustText("account.pw.empty"))
	} else {
		err = h.accounts.ChangePassword(c.UserContext(), principal(c), current, c.FormValue("password"))
	}
	if err == nil {
		return redirect(c, Prefix+"/account?done=password")
	}
	v, verr := h.accountView(c)
	if verr != nil {
		return verr
	}
	// The service names the current password "currentPassword"; the form
	// calls its field "current".
	var invalid *domain.ValidationError
	if errors.Is(err, domain.ErrUnauthorized) || (errors.As(err, &invalid) && invalid.Fields["currentPassword"] != "") {
		err = domain.InvalidField("current", mustText("account.pw.wrong"))
	}
	if ferr := formError(v, err); ferr != nil {
		return ferr
	}
	return h.render(c, fiber.StatusBadRequest, "account", v)
}

// SignOutOthers ends the user's other sessions.
func (h *Handlers) SignOutOthers(c *fiber.Ctx) error {
	if _, err := h.accounts.SignOutOthers(c.UserContext(), sessionToken(c)); err != nil {
		return err
	}
	return redirect(c, Prefix+"/account?done=others")
}

func itoa(n int) string { return strconv.Itoa(n) }
