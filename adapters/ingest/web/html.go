package web

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// pageMeta is what the crawler reads from a page's raw HTML: its links and
// its robots directives. Links come from the markup, not from the extracted
// text, which has lost them.
type pageMeta struct {
	links    []*url.URL
	noindex  bool
	nofollow bool
}

// parsePage tokenizes body and collects the targets of <a> and <area>
// elements (resolved against <base href> when present, else pageURL; links
// marked rel="nofollow" left out) and the directives of <meta name="robots">
// or of a meta tag naming agent. Malformed HTML is read as a browser would.
func parsePage(body []byte, pageURL *url.URL, agent string) pageMeta {
	var (
		meta  pageMeta
		hrefs []string
		base  = pageURL
		based bool
	)
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if !hasAttr {
			continue
		}
		attrs := readAttrs(z)
		switch string(name) {
		case "a", "area":
			if href, ok := attrs["href"]; ok && !hasToken(attrs["rel"], "nofollow") {
				hrefs = append(hrefs, href)
			}
		case "base":
			// The first <base href> is the document's base URL, wherever
			// the links are.
			if href, ok := attrs["href"]; ok && !based {
				based = true
				if b, err := pageURL.Parse(strings.TrimSpace(href)); err == nil {
					base = b
				}
			}
		case "meta":
			n := strings.ToLower(strings.TrimSpace(attrs["name"]))
			if n == "robots" || n == strings.ToLower(agent) {
				noindex, nofollow := robotsDirectives(attrs["content"])
				meta.noindex = meta.noindex || noindex
				meta.nofollow = meta.nofollow || nofollow
			}
		}
	}
	for _, h := range hrefs {
		if u, ok := resolveLink(base, h); ok {
			meta.links = append(meta.links, u)
		}
	}
	return meta
}

// readAttrs returns the current tag's attributes, keys lowercased by the
// tokenizer; the first of duplicated attributes wins, as in browsers.
func readAttrs(z *html.Tokenizer) map[string]string {
	attrs := make(map[string]string, 4)
	for {
		k, v, more := z.TagAttr()
		if _, dup := attrs[string(k)]; !dup {
			attrs[string(k)] = string(v)
		}
		if !more {
			return attrs
		}
	}
}

// hasToken reports whether the space-separated list holds tok, ignoring case.
func hasToken(list, tok string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// robotsDirectives reads a robots meta content ("noindex, nofollow",
// "none", "NOINDEX").
func robotsDirectives(content string) (noindex, nofollow bool) {
	for _, d := range strings.FieldsFunc(content, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		switch strings.ToLower(d) {
		case "noindex":
			noindex = true
		case "nofollow":
			nofollow = true
		case "none":
			noindex, nofollow = true, true
		}
	}
	return noindex, nofollow
}

// headerRobots reads X-Robots-Tag headers: "noindex", "noindex, nofollow",
// or directives for one crawler ("googlebot: noindex"), applied only when
// the crawler is agent.
func headerRobots(values []string, agent string) (noindex, nofollow bool) {
	for _, v := range values {
		if i := strings.IndexByte(v, ':'); i >= 0 {
			who := strings.TrimSpace(v[:i])
			// "unavailable_after: <date>" and "max-snippet: 20" are
			// directives with a value, not agents; agent names hold no
			// commas or spaces.
			if !strings.ContainsAny(who, ", ") && !valuedDirective(who) {
				if !strings.EqualFold(who, agent) {
					continue
				}
				v = v[i+1:]
			}
		}
		ni, nf := robotsDirectives(v)
		noindex = noindex || ni
		nofollow = nofollow || nf
	}
	return noindex, nofollow
}

// valuedDirective reports whether name is a robots directive that takes a
// value after a colon.
func valuedDirective(name string) bool {
	switch strings.ToLower(name) {
	case "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview":
		return true
	}
	return false
}
