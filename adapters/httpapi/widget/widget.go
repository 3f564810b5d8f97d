// Package widget serves the chat widget: the page at /chat/{slug}, its
// embedded static assets at /chat/_assets/{file}, and the public endpoint
// that opens a widget session. The page and its assets live outside /api:
// they are HTML, scripts and styles, not the JSON API.
package widget

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	corewidget "github.com/conciergehq/concierge/core/widget"
)

// files are the widget's front end; the frontend owns them. Templates
// (*.tmpl) are rendered, everything else is served as is. "all:" keeps
// files whose names start with "." or "_" in vendored libraries.
//
//go:embed all:assets
var files embed.FS

// Template names under assets/.
const (
	pageTemplate     = "page.html.tmpl"
	notFoundTemplate = "notfound.html.tmpl"
)

// AssetsPrefix is where the assets are served; "_" can never start a
// slug or an agent id, so it cannot shadow a widget.
const AssetsPrefix = "/chat/_assets/"

// Headers of the page and its assets.
const (
	cachePage   = "no-store"
	cacheAsset  = "public, max-age=31536000, immutable"
	cacheLatest = "public, no-cache"
	// csp allows only our own scripts, styles and connections, and images
	// from https (agent avatars); frame-ancestors is appended per agent.
	csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; " +
		"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "
)

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	// version is the first 12 hex digits of the body's SHA-256: the ?v= of
	// its links, which change whenever the file does.
	version string
	etag    string
}

// Handlers serves the widget's page, assets and session endpoint.
type Handlers struct {
	widgets      *corewidget.Service
	availability Availability
	decoder      *wire.Decoder
	page         *template.Template
	notFound     *template.Template
	assets       map[string]asset
	// links are the versioned URLs of every asset, by name under assets/,
	// for the templates ("widget.js" -> "/chat/_assets/widget.js?v=…").
	links map[string]string
}

// NewHandlers loads the embedded templates and assets. Its error means the
// build embeds a broken front end.
func NewHandlers(widgets *corewidget.Service, availability Availability, decoder *wire.Decoder) (*Handlers, error) {
	h := &Handlers{widgets: widgets, availability: availability, decoder: decoder, assets: map[string]asset{}, links: map[string]string{}}
	root, err := fs.Sub(files, "assets")
	if err != nil {
		return nil, err
	}
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(name, ".tmpl") {
			return err
		}
		body, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := asset{body: body, contentType: contentType(name), version: hex.EncodeToString(sum[:])[:12]}
		a.etag = `"` + hex.EncodeToString(sum[:16]) + `"`
		h.assets[name] = a
		h.links[name] = AssetsPrefix + name + "?v=" + a.version
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("widget: reading the embedded assets: %w", err)
	}
	if h.page, err = template.ParseFS(root, pageTemplate); err != nil {
		return nil, fmt.Errorf("widget: %w", err)
	}
	if h.notFound, err = template.ParseFS(root, notFoundTemplate); err != nil {
		return nil, fmt.Errorf("widget: %w", err)
	}
	return h, nil
}

// contentType is an asset's Content-Type: text types in UTF-8, and
// JavaScript as text/javascript, which module scripts require.
func contentType(name string) string {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json", ".map":
		return "application/json; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".woff2":
		return "font/woff2" // not in every system's MIME table
	case "", ".md", ".txt":
		return "text/plain; charset=utf-8" // LICENSE, README.md of vendored libraries
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

// pageData is what page.html.tmpl renders. Config goes, as JSON, into
// <script type="application/json" id="concierge-config">, which
// html/template escapes as JSON in that context.
type pageData struct {
	Title  string
	Lang   string
	Config widgetConfig
	Assets map[string]string
}

// notFoundData is what notfound.html.tmpl renders: no agent information.
type notFoundData struct {
	Assets map[string]string
}

// widgetConfig is what widget.js reads from #concierge-config.
type widgetConfig struct {
	Agent            agentConfig `json:"agent"`
	WidgetSlug       string      `json:"widgetSlug"`
	HandoffAvailable bool        `json:"handoffAvailable"`
	PoweredBy        bool        `json:"poweredBy"`
	API              apiConfig   `json:"api"`
}

type agentConfig struct {
	Slug               string   `json:"slug"`
	Name               string   `json:"name"`
	AvatarURL          string   `json:"avatarUrl"`
	PrimaryColor       string   `json:"primaryColor"`
	WelcomeMessage     string   `json:"welcomeMessage"`
	SuggestedQuestions []string `json:"suggestedQuestions"`
}

type apiConfig struct {
	Base string `json:"base"`
}

// Page serves GET /chat/{slug}: it renders the widget of the published
// agent at the address, or the friendly 404 page. Other errors go to the
// one ErrorHandler, which logs them and shows nothing of them.
func (h *Handlers) Page(c *fiber.Ctx) error {
	setPageHeaders(c, nil)
	w, err := h.widgets.Resolve(c.UserContext(), strings.Clone(c.Params("slug")))
	if errors.Is(err, domain.ErrNotFound) {
		return h.renderNotFound(c)
	}
	if err != nil {
		return err
	}
	questions := w.Agent.Config.SuggestedQuestions
	if questions == nil {
		questions = []string{}
	}
	data := pageData{
		Title: w.Agent.Name,
		Lang:  "en",
		Config: widgetConfig{
			Agent: agentConfig{
				Slug: w.Agent.Slug, Name: w.Agent.Name, AvatarURL: w.Agent.Config.AvatarURL,
				PrimaryColor: w.Agent.Config.EffectivePrimaryColor(), WelcomeMessage: w.Agent.Config.WelcomeMessage,
				SuggestedQuestions: questions,
			},
			WidgetSlug:       w.Address,
			HandoffAvailable: w.HandoffAvailable,
			PoweredBy:        w.PoweredBy,
			API:              apiConfig{Base: "/api"},
		},
		Assets: h.links,
	}
	setPageHeaders(c, w.Agent.Config.AllowedOrigins)
	return render(c, fiber.StatusOK, h.page, data)
}

func (h *Handlers) renderNotFound(c *fiber.Ctx) error {
	setPageHeaders(c, nil)
	return render(c, fiber.StatusNotFound, h.notFound, notFoundData{Assets: h.links})
}

// render executes the template fully before anything is sent, so a
// template error is a clean 500, never half a page.
func render(c *fiber.Ctx, status int, t *template.Template, data any) error {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("widget: rendering %s: %w", t.Name(), err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

// setPageHeaders sets the headers of the page and the 404 page. Embedding
// is open to every site unless the agent lists origins; the origins were
// checked when stored and are checked again here, because a header is no
// place for a surprise.
func setPageHeaders(c *fiber.Ctx, origins []string) {
	c.Set("Content-Security-Policy", csp+frameAncestors(origins))
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "strict-origin-when-cross-origin")
	c.Set(fiber.HeaderCacheControl, cachePage)
}

func frameAncestors(origins []string) string {
	if len(origins) == 0 {
		return "*"
	}
	out := []string{"'self'"}
	for _, o := range origins {
		if n, err := domain.NormalizeOrigin(o); err == nil {
			out = append(out, n)
		}
	}
	return strings.Join(out, " ")
}

// Asset serves GET AssetsPrefix + name: an embedded file. Links from the page carry the file's
// version (?v=), so those responses may be cached for a year; a request
// without it (a module's relative import, say) or with an old version is
// revalidated with the ETag instead, so it can never pin a stale file.
func (h *Handlers) Asset(c *fiber.Ctx) error {
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	a, ok := h.assets[c.Params("*")]
	if !ok {
		return fiber.ErrNotFound
	}
	cache := cacheLatest
	if c.Query("v") == a.version {
		cache = cacheAsset
	}
	c.Set(fiber.HeaderCacheControl, cache)
	c.Set(fiber.HeaderETag, a.etag)
	if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && etagMatches(match, a.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	return c.Send(a.body)
}

// etagMatches reports whether an If-None-Match list names etag (weak or
// strong) or is "*".
func etagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == etag || candidate == "*" {
			return true
		}
	}
	return false
}
