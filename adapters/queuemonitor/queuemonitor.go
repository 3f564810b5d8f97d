// Package queuemonitor serves asynqmon, asynq's web UI, read-only and
// with every task payload and result redacted, for the console to mount
// behind its operator check (docs/console.md, "Queue monitor").
//
// The queues are the deployment's, shared by every workspace, and a task's
// payload names another tenant's workspace, conversation or delivery: the
// UI shows counts, states, task types, timings and errors, never a payload.
// Only GET and HEAD reach asynqmon; anything else is refused here, before
// asynqmon's own read-only check, so no route it adds later can change a
// queue.
package queuemonitor

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
)

// Redacted stands for every payload and result in the UI and its API.
const Redacted = "(redacted: task payloads may hold another workspace's data)"

// Monitor is the queue UI. Close it at shutdown: it holds its own Redis
// connections.
type Monitor struct {
	ui   *asynqmon.HTTPHandler
	csp  string
	root string
	// googleFonts matches the page's stylesheet links to Google Fonts.
	googleFonts *regexp.Regexp
}

// New builds the monitor over the queues' Redis, mounted at root (such as
// "/console/queues").
func New(redis asynq.RedisConnOpt, root string) (*Monitor, error) {
	ui := asynqmon.New(asynqmon.Options{
		RootPath:         root,
		RedisConnOpt:     redis,
		ReadOnly:         true,
		PayloadFormatter: asynqmon.PayloadFormatterFunc(func(string, []byte) string { return Redacted }),
		ResultFormatter:  asynqmon.ResultFormatterFunc(func(string, []byte) string { return Redacted }),
	})
	m := &Monitor{ui: ui, root: root, googleFonts: regexp.MustCompile(`<link rel="stylesheet" href="https://fonts\.googleapis\.com/[^"]*"/?>`)}
	csp, err := contentSecurityPolicy(ui, root)
	if err != nil {
		_ = ui.Close()
		return nil, err
	}
	m.csp = csp
	return m, nil
}

// ServeHTTP serves the UI and its API to GET and HEAD only. Whoever mounts
// it sets CSP as the page's Content-Security-Policy.
func (m *Monitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the queue monitor is read-only", http.StatusMethodNotAllowed)
		return
	}
	if strings.HasPrefix(r.URL.Path, m.root+"/api/") || strings.HasPrefix(r.URL.Path, m.root+"/static/") {
		m.ui.ServeHTTP(w, r)
		return
	}
	// The page itself (and its few small icons) pass through here, so its
	// links to Google Fonts can be taken out: with them, every operator's
	// browser would tell Google each time it opened the monitor. The UI
	// draws its icons as SVG and names Helvetica and Arial after Roboto,
	// so nothing is lost but the typeface.
	rec := httptest.NewRecorder()
	m.ui.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		body = m.googleFonts.ReplaceAll(body, nil)
		rec.Header().Del("Content-Length")
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// CSP is the monitor's Content-Security-Policy (see contentSecurityPolicy).
func (m *Monitor) CSP() string { return m.csp }

// Close closes the monitor's Redis connections.
func (m *Monitor) Close() error { return m.ui.Close() }

// contentSecurityPolicy allows what asynqmon's UI needs and nothing more.
// Its page carries two inline scripts (its settings and webpack's loader):
// they are allowed by their hashes, taken from the page as rendered here,
// not by 'unsafe-inline'. Its components (Material-UI) add <style>
// elements at run time, which needs style-src 'unsafe-inline' (styles
// only: scripts stay hash-bound). Its links to Google Fonts are taken out
// of the page (ServeHTTP), so no other host is allowed. It calls only its
// own API (connect-src 'self'), and nothing may frame it.
func contentSecurityPolicy(ui http.Handler, root string) (string, error) {
	rec := httptest.NewRecorder()
	ui.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, root, nil))
	if rec.Code != http.StatusOK {
		return "", fmt.Errorf("queue monitor: its page answered %d", rec.Code)
	}
	scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllSubmatch(rec.Body.Bytes(), -1)
	if len(scripts) == 0 {
		return "", fmt.Errorf("queue monitor: no inline script found in its page; check its Content-Security-Policy")
	}
	var hashes []string
	for _, s := range scripts {
		sum := sha256.Sum256(s[1]) // the exact text between the tags
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return "default-src 'self'; script-src 'self' " + strings.Join(hashes, " ") +
		"; style-src 'self' 'unsafe-inline'; font-src 'self'; " +
		"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'; object-src 'none'", nil
}
