package web

import (
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/conciergehq/concierge/core/domain"
)

// maxURLLength bounds URLs taken from callers, pages and sitemaps.
const maxURLLength = 2048

// skippedExtensions are file types that are never HTML pages; links to
// them are not requested at all.
var skippedExtensions = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".svg": true,
	".ico": true, ".bmp": true, ".tif": true, ".tiff": true, ".avif": true,
	".css": true, ".js": true, ".mjs": true, ".map": true, ".json": true, ".xml": true,
	".rss": true, ".atom": true, ".txt": true, ".csv": true,
	".zip": true, ".gz": true, ".tgz": true, ".tar": true, ".rar": true, ".7z": true, ".bz2": true, ".xz": true,
	".pdf": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true,
	".odt": true, ".ods": true, ".epub": true,
	".mp3": true, ".mp4": true, ".m4a": true, ".wav": true, ".ogg": true, ".webm": true,
	".avi": true, ".mov": true, ".mkv": true, ".flac": true,
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
	".exe": true, ".msi": true, ".dmg": true, ".pkg": true, ".deb": true, ".rpm": true,
	".apk": true, ".iso": true, ".bin": true, ".wasm": true,
}

// parseTarget parses a URL given by the caller and returns its normal form.
func parseTarget(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return nil, domain.InvalidField("url", "is required")
	case len(raw) > maxURLLength:
		return nil, domain.InvalidField("url", "is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return nil, domain.InvalidField("url", "must be an absolute http or https URL")
	}
	return normalizeTarget(u)
}

// normalizeTarget checks that u may be requested (http or https, a host,
// no user info) and returns a copy in normal form: scheme and host
// lowercased, default port and fragment dropped, empty path made "/". Two
// spellings of one page thus give one string, which the crawler dedupes on.
func normalizeTarget(u *url.URL) (*url.URL, error) {
	c := *u
	c.Scheme = strings.ToLower(c.Scheme)
	if c.Scheme != "http" && c.Scheme != "https" {
		return nil, domain.InvalidField("url", "must use http or https")
	}
	if c.User != nil {
		return nil, domain.InvalidField("url", "must not contain a user name or password")
	}
	if c.Opaque != "" {
		return nil, domain.InvalidField("url", "must be an absolute http or https URL")
	}
	host := strings.TrimSuffix(strings.ToLower(c.Hostname()), ".")
	if host == "" {
		return nil, domain.InvalidField("url", "has no host")
	}
	port := c.Port()
	if n, err := strconv.Atoi(port); port != "" && (err != nil || n < 1 || n > 65535) {
		return nil, domain.InvalidField("url", "has an invalid port")
	}
	if port == defaultPort(c.Scheme) {
		port = ""
	}
	switch {
	case port != "":
		c.Host = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"):
		c.Host = "[" + host + "]"
	default:
		c.Host = host
	}
	c.Fragment, c.RawFragment = "", ""
	if c.Path == "" {
		c.Path, c.RawPath = "/", ""
	}
	if c.RawQuery == "" {
		c.ForceQuery = false
	}
	return &c, nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// hostKey names u's site: host and non-default port. http://example.com and
// https://example.com are one site; example.com and www.example.com, or two
// ports of one host, are different sites. Only normalised URLs are passed.
func hostKey(u *url.URL) string { return u.Host }

// resolveLink turns an href found on a page into an absolute, normalised URL
// worth requesting, or reports false: other schemes (mailto:, javascript:,
// tel:, data:), fragments of the same page, and links to files that are
// never pages (images, styles, scripts, archives, PDFs ...).
func resolveLink(base *url.URL, href string) (*url.URL, bool) {
	// Browsers strip these from URLs in attributes; so do we.
	href = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, strings.TrimSpace(href))
	if href == "" || strings.HasPrefix(href, "#") || len(href) > maxURLLength {
		return nil, false
	}
	ref, err := url.Parse(href)
	if err != nil {
		return nil, false
	}
	u, err := normalizeTarget(base.ResolveReference(ref))
	if err != nil || len(u.String()) > maxURLLength {
		return nil, false
	}
	return u, maybePage(u)
}

// maybePage reports whether u may be an HTML page, judging by the
// extension of its path.
func maybePage(u *url.URL) bool {
	return !skippedExtensions[strings.ToLower(path.Ext(u.Path))]
}
