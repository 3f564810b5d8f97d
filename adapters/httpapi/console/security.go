package console

import (
	"crypto/subtle"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/bodylimit"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// csp allows only the console's own scripts, styles and images (and data:
// images), frames of this origin (the widget preview), and forms posting
// back here; nobody may frame the console.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; " +
	"frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"

// Names of the CSRF token in forms and in htmx requests' headers.
const (
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

type (
	principalKey struct{}
	memberKey    struct{}
	tokenKey     struct{}
	// Knowledge: the CSRF token an upload's handler must find in its form.
	uploadCSRFKey struct{}
)

// Secure comes first on every console route: it sets the security headers,
// makes errors render as console pages (through the one ErrorHandler), and
// refuses cross-origin state-changing requests.
//
// The cross-origin check is the console's defence against CSRF before a
// session exists (sign-in, invitations, password resets), and a second
// one after: browsers send Sec-Fetch-Site, and before it Origin, with every
// POST, and a page cannot forge either. It follows Go's
// net/http.CrossOriginProtection: Sec-Fetch-Site must be same-origin (or
// none: typed by the user); without it, an Origin must match the Host. A
// request with neither header does not come from a browser (every browser
// since 2020 sends Origin on a POST), so it cannot carry a victim's cookies
// and is let through to the session checks. An Origin equal to the
// configured public URL's is accepted too, for proxies that rewrite Host.
func (h *Handlers) Secure(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	if !strings.HasPrefix(c.Path(), AssetsPrefix) {
		// Pages carry people's data and CSRF tokens: never keep them.
		// Assets are public and content-addressed, so they may be cached.
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	wire.SetErrorPage(c, h.errorPage)
	if !safeMethod(c.Method()) && !sameOrigin(c, h.publicOrigin) {
		return &domain.ForbiddenError{Reason: mustText("err.crossorigin")}
	}
	return c.Next()
}

func safeMethod(m string) bool {
	return m == fiber.MethodGet || m == fiber.MethodHead || m == fiber.MethodOptions
}

func sameOrigin(c *fiber.Ctx, publicOrigin string) bool {
	switch c.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return true
	}
	if strings.EqualFold(origin, publicOrigin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, string(c.Request().Host()))
}

// Session authenticates the session cookie and refuses state-changing
// requests without the session's CSRF token. Without a valid session a
// page redirects to sign-in (and back afterwards); the token is read from
// the cookie only, never from the URL.
func (h *Handlers) Session(c *fiber.Ctx) error {
	token := c.Cookies(h.cookieName)
	if token == "" {
		return h.toSignIn(c)
	}
	p, err := h.accounts.Authenticate(c.UserContext(), token)
	if errors.Is(err, domain.ErrUnauthorized) {
		h.clearCookie(c)
		return h.toSignIn(c)
	}
	if err != nil {
		return err
	}
	switch {
	case safeMethod(c.Method()):
	case bodylimit.IsUpload(c) && c.Get(csrfHeader) == "":
		// Knowledge: a file upload's body is a live stream that only its
		// handler may read, so the token in its form is checked there, as
		// the form's first part, before any file is read (checkUploadCSRF).
		c.Locals(uploadCSRFKey{}, p.Session.CSRFToken)
	case !validCSRF(c, p.Session.CSRFToken):
		return &domain.ForbiddenError{Reason: mustText("err.csrf")}
	}
	c.Locals(principalKey{}, p)
	c.Locals(tokenKey{}, strings.Clone(token))
	return c.Next()
}

// validCSRF compares the request's token, from the form or the header
// htmx sends, with the session's in constant time.
func validCSRF(c *fiber.Ctx, want string) bool {
	got := c.Get(csrfHeader)
	if got == "" {
		got = c.FormValue(csrfField)
	}
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// toSignIn sends a signed-out visitor to the sign-in page, remembering the
// page they asked for when it is one to come back to.
func (h *Handlers) toSignIn(c *fiber.Ctx) error {
	target := Prefix + "/sign-in"
	if c.Method() == fiber.MethodGet {
		if next := c.OriginalURL(); safeNext(next) != Prefix {
			target += "?next=" + url.QueryEscape(next)
		}
	}
	return redirect(c, target)
}

// redirect answers 303 See Other (a POST is followed by a GET); htmx
// requests get HX-Redirect so the whole page moves, not a fragment.
func redirect(c *fiber.Ctx, to string) error {
	if c.Get("HX-Request") == "true" {
		c.Set("HX-Redirect", to)
		return c.SendStatus(fiber.StatusNoContent)
	}
	return c.Redirect(to, fiber.StatusSeeOther)
}

// Workspace resolves the member the request acts as from the workspace
// in its URL. Not being a member is answered exactly like an unknown
// workspace: 404.
func (h *Handlers) Workspace(c *fiber.Ctx) error {
	p := principal(c)
	m, err := h.accounts.Member(c.UserContext(), p.User.ID, c.Params("workspaceID"))
	if err != nil {
		return err
	}
	c.Locals(memberKey{}, m)
	return c.Next()
}

// Require refuses members whose role lacks the permission (403 page, in
// the string table's words).
func Require(perm domain.Permission) fiber.Handler {
	reason := mustText("err.forbidden", mustText("perm."+string(perm)))
	return func(c *fiber.Ctx) error {
		if err := member(c).Role.Require(perm); err != nil {
			return &domain.ForbiddenError{Reason: reason}
		}
		return c.Next()
	}
}

func principal(c *fiber.Ctx) account.Principal {
	p, _ := c.Locals(principalKey{}).(account.Principal)
	return p
}

func member(c *fiber.Ctx) domain.Member {
	m, _ := c.Locals(memberKey{}).(domain.Member)
	return m
}

func sessionToken(c *fiber.Ctx) string {
	t, _ := c.Locals(tokenKey{}).(string)
	return t
}

// setCookie stores a new session token. The cookie lives as long as the
// session may (its absolute expiry); the server ends it sooner when idle.
func (h *Handlers) setCookie(c *fiber.Ctx, token string, expires time.Time) {
	c.Cookie(&fiber.Cookie{
		Name: h.cookieName, Value: token, Path: "/", Expires: expires,
		HTTPOnly: true, Secure: h.secure, SameSite: fiber.CookieSameSiteLaxMode,
	})
}

func (h *Handlers) clearCookie(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{
		Name: h.cookieName, Value: "", Path: "/", Expires: time.Unix(0, 0), MaxAge: -1,
		HTTPOnly: true, Secure: h.secure, SameSite: fiber.CookieSameSiteLaxMode,
	})
}

// safeNext returns where to go after signing in: next when it is a path
// of the console on this site, the console's home otherwise. Anything a
// browser could read as another host is refused: "//evil.com",
// "/\evil.com", schemes, and their percent-encoded spellings (the value is
// decoded until it no longer changes, then checked).
func safeNext(next string) string {
	const home = Prefix
	s := next
	for range 3 {
		d, err := url.PathUnescape(s)
		if err != nil {
			return home
		}
		if d == s {
			break
		}
		s = d
	}
	if s != next && strings.Contains(s, "%") {
		return home // still encoded after three rounds: nobody means that
	}
	pathPart, _, _ := strings.Cut(s, "?")
	if strings.ContainsAny(s, "\\\r\n\t\x00") || strings.Contains(pathPart, "//") {
		return home // no console path has an empty segment
	}
	if s != Prefix && !strings.HasPrefix(s, Prefix+"/") && !strings.HasPrefix(s, Prefix+"?") {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return home
	}
	for _, seg := range strings.Split(pathPart, "/") {
		if seg == ".." {
			return home
		}
	}
	return next
}

// formValue is a form field as a string of its own (fiber's value aliases
// a buffer it reuses), with line breaks as the API stores them: browsers
// send each line break of a <textarea> as CRLF, which would store a "\r"
// per line and count it against the field's length.
func formValue(c *fiber.Ctx, name string) string {
	v := c.FormValue(name)
	if strings.Contains(v, "\r\n") {
		return strings.ReplaceAll(v, "\r\n", "\n")
	}
	return strings.Clone(v)
}
