package web

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html/charset"

	"github.com/conciergehq/concierge/core/domain"
)

// Sitemap limits, from the sitemaps protocol (50,000 URLs and 50 MiB per
// file) plus caps on how far an index may fan out.
const (
	maxSitemapBytes = 50 << 20 // per file, after decompression
	maxSitemapURLs  = 50_000   // per crawl, over all files
	maxSitemapFiles = 50       // per crawl, the start included
	// maxSitemapLevels is how deep files may nest: the start, the sitemaps
	// it lists, and the sitemaps those list. Deeper ones are ignored.
	maxSitemapLevels = 3
)

// sitemap is a <urlset> or a <sitemapindex>; tags match in any namespace.
type sitemap struct {
	XMLName  xml.Name
	URLs     []sitemapLoc `xml:"url"`
	Sitemaps []sitemapLoc `xml:"sitemap"`
}

type sitemapLoc struct {
	Loc string `xml:"loc"`
}

// sitemapType reports whether a declared media type may hold a sitemap:
// XML, gzip, or undeclared (then the body decides).
func sitemapType(mt string) bool {
	switch mt {
	case "", "application/xml", "text/xml", "application/gzip", "application/x-gzip", "application/octet-stream":
		return true
	}
	return strings.HasSuffix(mt, "+xml") && !isHTMLType(mt)
}

// readSitemap decodes a sitemap body, gunzipping it when it starts with the
// gzip magic bytes (sitemap.xml.gz served as a file, not as a
// Content-Encoding, which the transport already undoes).
func (f *Fetcher) readSitemap(ctx context.Context, r *response) (*sitemap, error) {
	mt := mediaType(r.resp.Header.Get("Content-Type"))
	if !sitemapType(mt) {
		return nil, domain.InvalidField("url", fmt.Sprintf("the sitemap is %s, not XML", describeType(mt)))
	}
	raw := &capReader{r: r.resp.Body, left: maxSitemapBytes}
	br := bufio.NewReader(raw)
	var in io.Reader = br
	var unzipped *capReader
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			if raw.err != nil {
				return nil, f.sitemapReadError(ctx, r, raw.err)
			}
			return nil, domain.InvalidField("url", "the sitemap is not valid gzip")
		}
		defer zr.Close()
		unzipped = &capReader{r: zr, left: maxSitemapBytes}
		in = unzipped
	}
	sm, err := decodeSitemap(in)
	if err != nil {
		if raw.err != nil {
			return nil, f.sitemapReadError(ctx, r, raw.err)
		}
		if unzipped != nil && unzipped.err == errTooLarge {
			return nil, tooLarge("sitemap", maxSitemapBytes)
		}
		return nil, domain.InvalidField("url", "the sitemap is not valid XML")
	}
	if sm.XMLName.Local != "urlset" && sm.XMLName.Local != "sitemapindex" {
		return nil, domain.InvalidField("url", "is not a sitemap (no <urlset> or <sitemapindex>)")
	}
	return sm, nil
}

func (f *Fetcher) sitemapReadError(ctx context.Context, r *response, err error) error {
	if err == errTooLarge {
		return tooLarge("sitemap", maxSitemapBytes)
	}
	return f.requestError(ctx, r.url, err)
}

// decodeSitemap parses a sitemap leniently, as real ones are often sloppy
// (a stray "&", an ISO-8859-1 declaration). encoding/xml never fetches
// external entities.
func decodeSitemap(in io.Reader) (*sitemap, error) {
	dec := xml.NewDecoder(in)
	dec.Strict = false
	dec.Entity = xml.HTMLEntity
	dec.CharsetReader = charset.NewReaderLabel
	var sm sitemap
	if err := dec.Decode(&sm); err != nil {
		return nil, err
	}
	return &sm, nil
}

// sitemapURL parses one <loc>, which must be absolute.
func sitemapURL(loc string) (*url.URL, bool) {
	loc = strings.TrimSpace(loc)
	if loc == "" || len(loc) > maxURLLength {
		return nil, false
	}
	u, err := url.Parse(loc)
	if err != nil || !u.IsAbs() {
		return nil, false
	}
	n, err := normalizeTarget(u)
	return n, err == nil
}
