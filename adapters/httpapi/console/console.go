// Package console serves the admin console at /console: server-rendered
// pages (html/template, embedded, with a vendored htmx) over the same use
// cases as the API. Sign-in uses server-side sessions in a cookie; every
// route under /console/w/{workspaceID} is scoped to the signed-in user's
// membership of that workspace and checked against its role. The route
// table lives in adapters/httpapi/routes.go; this package provides the
// handlers and the middleware it lists.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/ports"
)

// files are the console's templates and static assets. "all:" keeps files
// whose names start with "." or "_".
//
//go:embed all:assets
var files embed.FS

// Prefix is where the console is mounted; AssetsPrefix where its static
// files are served.
const (
	Prefix       = "/console"
	AssetsPrefix = Prefix + "/assets/"
)

// Cookie names. Browsers accept a "__Host-" cookie only when it is Secure,
// has Path=/ and no Domain, which pins it to this exact origin; a plain-http
// development server on a loopback address cannot set a Secure cookie, so
// there the cookie goes by the unprefixed name.
const (
	cookieSecure   = "__Host-concierge_session"
	cookieLoopback = "concierge_session"
)

// Options configure the console.
type Options struct {
	// PublicURL is the service's public base URL, without a trailing slash:
	// the widget's address in embed snippets, and whether cookies are
	// Secure (always, except for plain http on a loopback host).
	PublicURL string
	// Log receives what the console cannot show (a failed sign-out).
	Log *slog.Logger
	// Deliveries serves the integration settings and the delivery log
	// (delivery.Service); nil leaves those pages answering 503.
	Deliveries Deliveries
	// Conversations: Conversations (conversation.Service) serves the
	// conversation pages and the playground's transcript; Chat
	// (ChatEngine of chat.Service) the playground's answers. Nil leaves
	// those pages answering 503.
	Conversations Conversations
	Chat          Chat
	// Reveals keeps a secret just made between the POST and the one GET
	// that shows it (reveal.go); nil leaves the pages that make secrets
	// answering 503 before they make any.
	Reveals ports.OneTimeStore
	// Events opens the workspace event streams the inbox follows
	// (relay.Service); nil leaves the stream answering 503.
	Events sse.WorkspaceOpener
	// Inbox: Inbox (inbox.Service) serves the inbox's lists and the
	// thread's side panels; Ownership (assignment.Service) its take over
	// and assign buttons; Composer (handoff.Service) replies, notes and
	// status; SavedReplies (savedreply.Service) the composer's "/". Nil
	// leaves the pages or actions needing them answering 503.
	Inbox        Inbox
	Ownership    Ownership
	Composer     Composer
	SavedReplies SavedReplies
	// Availability serves the availability toggle of every workspace
	// page; Suggestions the inbox's "Suggest a reply". Nil leaves them
	// answering 503.
	Availability Availability
	Suggestions  Suggestions
	// Reports serves the Reports page and its CSV (report.Service); nil
	// leaves them answering 503.
	Reports Reports
	// Unanswered (unanswered.Service) serves the unanswered topics and the
	// improve forms; nil leaves them answering 503 and hides the
	// transcripts' "Improve this answer" links.
	Unanswered Unanswered
	// Queues is the deployment's queue monitor, served at /console/queues
	// to the owners of OperatorWorkspace only (queues.go); either unset
	// leaves that page not found for everyone.
	Queues            QueueMonitor
	OperatorWorkspace string
	// Site is the parsed pages and assets (LoadSite); nil loads them.
	Site *Site
}

// Handlers serves the console's pages. Build it with New.
type Handlers struct {
	accounts   Accounts
	workspaces Workspaces
	agents     Agents
	deliveries Deliveries
	publicURL  string
	log        *slog.Logger
	// secure says whether the session cookie is Secure (and so named with
	// the "__Host-" prefix).
	secure     bool
	cookieName string
	// publicOrigin is the public URL's scheme://host[:port].
	publicOrigin string
	pages        map[string]*template.Template
	assets       map[string]asset
	// links are the versioned URLs of the assets, by name under assets/.
	links map[string]string

	// Conversations: the conversation pages and the playground.
	conversations Conversations
	chat          Chat

	reveals ports.OneTimeStore
	events  sse.WorkspaceOpener

	// Inbox
	inbox        Inbox
	ownership    Ownership
	composer     Composer
	savedReplies SavedReplies

	availability Availability
	suggestions  Suggestions
	reports      Reports
	unanswered   Unanswered

	queues            QueueMonitor
	operatorWorkspace string
}

type asset struct {
	body        []byte
	contentType string
}

// New loads the embedded templates and assets. Its error means the build
// embeds a broken console or the public URL does not parse.
func New(accounts Accounts, workspaces Workspaces, agents Agents, o Options) (*Handlers, error) {
	u, err := url.Parse(o.PublicURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("console: public URL %q must be an absolute http(s) URL", o.PublicURL)
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handlers{
		accounts: accounts, workspaces: workspaces, agents: agents, deliveries: o.Deliveries,
		conversations: o.Conversations, chat: o.Chat, // Conversations
		reveals: o.Reveals,
		events:  o.Events,
		inbox:   o.Inbox, ownership: o.Ownership, composer: o.Composer, savedReplies: o.SavedReplies, // Inbox
		availability: o.Availability, suggestions: o.Suggestions, reports: o.Reports, unanswered: o.Unanswered,
		queues: o.Queues, operatorWorkspace: o.OperatorWorkspace,
		publicURL: strings.TrimSuffix(o.PublicURL, "/"), log: log,
		secure: !(u.Scheme == "http" && isLoopback(u.Hostname())),
	}
	h.publicOrigin = u.Scheme + "://" + u.Host
	h.cookieName = cookieLoopback
	if h.secure {
		h.cookieName = cookieSecure
	}
	site := o.Site
	if site == nil {
		if site, err = LoadSite(); err != nil {
			return nil, err
		}
	}
	h.assets, h.links, h.pages = site.assets, site.links, site.pages
	return h, nil
}

// Site is the console's embedded pages and static assets, parsed and
// hashed. It never changes after LoadSite, and executing its templates is
// safe from many goroutines, so consoles may share one (Options.Site): the
// console package's tests build a console per case, and parsing the forty
// pages each time was most of their time.
type Site struct {
	assets map[string]asset
	// links are the versioned URLs of the assets, by name under assets/.
	links map[string]string
	pages map[string]*template.Template
}

// LoadSite parses the embedded templates and hashes the assets. Its error
// means the build embeds a broken console.
func LoadSite() (*Site, error) {
	s := &Site{assets: map[string]asset{}, links: map[string]string{}}
	if err := s.loadAssets(); err != nil {
		return nil, err
	}
	if err := s.loadPages(); err != nil {
		return nil, err
	}
	return s, nil
}

// isLoopback reports whether host names this machine: localhost or a
// loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Site) loadAssets() error {
	return fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".tmpl") {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
		sum := sha256.Sum256(body)
		s.assets[name] = asset{body: body, contentType: ct}
		s.links[name] = AssetsPrefix + name + "?v=" + hex.EncodeToString(sum[:6])
		return nil
	})
}

// loadPages parses each page template together with the layout, so each
// defines its own "title" and "main" blocks.
func (s *Site) loadPages() error {
	funcs := template.FuncMap{
		"t": tr,
		"asset": func(name string) (string, error) {
			l, ok := s.links[name]
			if !ok {
				return "", fmt.Errorf("console: no asset %q", name)
			}
			return l, nil
		},
		"roleText": func(r any) (string, error) { return tr("role." + fmt.Sprint(r)) },
		"dict":     dict,
	}
	names, err := fs.Glob(files, "assets/pages/*.html.tmpl")
	if err != nil {
		return err
	}
	// The layout and the shared parts are parsed once and each page is
	// parsed into a clone of them: parsing them again for each of the
	// forty pages was most of the time console.New took (and of the
	// console package's tests, which build a console per case).
	base, err := template.New("base").Funcs(funcs).ParseFS(files, "assets/layout.html.tmpl", "assets/parts.html.tmpl")
	if err != nil {
		return fmt.Errorf("console: layout: %w", err)
	}
	s.pages = map[string]*template.Template{}
	for _, p := range names {
		name := strings.TrimSuffix(path.Base(p), ".html.tmpl")
		t, err := base.Clone()
		if err != nil {
			return fmt.Errorf("console: page %s: %w", name, err)
		}
		if t, err = t.ParseFS(files, p); err != nil {
			return fmt.Errorf("console: page %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return nil
}

// Asset serves the console's static files. They are addressed with ?v= of
// their content's hash, so they may be cached for long.
func (h *Handlers) Asset(c *fiber.Ctx) error {
	name := strings.TrimPrefix(c.Path(), AssetsPrefix)
	a, ok := h.assets[name]
	if !ok {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	return c.Send(a.body)
}

// render executes a page into a buffer first, so a failing template is a
// clean 500 and never half a page.
func (h *Handlers) render(c *fiber.Ctx, status int, page string, v *view) error {
	t, ok := h.pages[page]
	if !ok {
		return fmt.Errorf("console: no page %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("console: rendering %s: %w", page, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

// dict builds the arguments of a sub-template from name, value pairs.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("console: dict needs pairs, got %d values", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("console: dict key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}
