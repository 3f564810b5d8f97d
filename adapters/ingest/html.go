package ingest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/conciergehq/concierge/core/domain"
)

// minArticleChars is the least text readability's article must have to be
// preferred over the whole page: below it, readability has usually latched
// onto a fragment (a teaser, a caption) of a page that is not an article.
const minArticleChars = 200

// maxHTMLElements caps the elements of an HTML file or page. The page is
// parsed into a tree that readability and the Markdown converter walk and
// copy: each element costs a few kB of memory on the way, so a file of
// flat tags (20 MB of "<p>a</p>") would take gigabytes. x/net/html itself
// refuses nesting deeper than 512 open elements.
const maxHTMLElements = 50_000

// maxHTMLTextBytes caps the visible text of an HTML file or page, below the
// text cap of other files: the tree, readability and the converter each
// hold their copies of it, about ten times the text in all.
const maxHTMLTextBytes = 4 << 20

// HTMLDocument extracts the main content of a web page as Markdown, as
// Extract does for .html files, with pageURL (may be "") set as the
// Document's URL and used to resolve relative links; the title falls back
// to pageURL. It returns a domain.ValidationError on field "url" when the
// page is binary, over the caps (DefaultMaxTextBytes of text,
// maxHTMLElements elements) or has no text.
func HTMLDocument(body []byte, pageURL string) (domain.Document, error) {
	out := newTextSink(DefaultMaxTextBytes)
	title, err := htmlToText(context.Background(), newHTMLConverter(), body, pageURL, out)
	var ve *domain.ValidationError
	if errors.As(err, &ve) && ve.Fields["file"] != "" {
		return domain.Document{}, domain.InvalidField("url", ve.Fields["file"])
	}
	if err != nil {
		return domain.Document{}, err
	}
	text := out.String()
	if text == "" {
		return domain.Document{}, domain.InvalidField("url", "the page has no text")
	}
	if title = cleanTitle(title); title == "" {
		title = pageURL
	}
	return domain.Document{Title: title, URL: pageURL, Text: text}, nil
}

// htmlDocument runs the HTML path under the extraction's time cap:
// readability takes no context.
func (e *Extractor) htmlDocument(ctx context.Context, body []byte, pageURL string, out *textSink) (string, error) {
	return runCtx(ctx, invalid("the HTML cannot be read"), func() (string, error) {
		return htmlToText(ctx, e.html, body, pageURL, out)
	})
}

// newHTMLConverter builds the HTML to Markdown converter: CommonMark with
// ATX ('#') headings and the table plugin, so headings drive chunking and
// tables keep their rows. A Converter is safe for concurrent use.
func newHTMLConverter() *converter.Converter {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(commonmark.WithHeadingStyle(commonmark.HeadingStyleATX)),
		table.NewTablePlugin(
			table.WithHeaderPromotion(true),
			table.WithSkipEmptyRows(true),
			table.WithSpanCellBehavior(table.SpanBehaviorMirror),
			table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal),
		),
	))
	// Noise for retrieval: images (alt text rarely helps, data: URIs are
	// huge), media and forms.
	for _, tag := range []string{"img", "picture", "svg", "video", "audio", "canvas", "form", "button", "select", "template"} {
		conv.Register.TagType(tag, converter.TagTypeRemove, converter.PriorityEarly)
	}
	return conv
}

// htmlReader decodes body to UTF-8; the charset comes from a byte-order
// mark, a <meta> tag or a guess.
func htmlReader(body []byte) io.Reader {
	var r io.Reader = bytes.NewReader(body)
	if cr, err := charset.NewReader(r, "text/html"); err == nil {
		r = cr
	}
	return r
}

// checkHTML reads the page as a stream of tokens, before any tree is
// built, and refuses it when it has more than maxHTMLElements elements, or
// more than maxText bytes of visible text (white space collapsed, as the
// Markdown has it).
func checkHTML(ctx context.Context, body []byte, maxText int) error {
	z := html.NewTokenizer(htmlReader(body))
	// The tokenizer holds one token whole: a tag with its attributes, or
	// a run of text.
	z.SetMaxBuf(2 * maxText)
	elements, text := 0, 0
	space := true // the text so far ends in white space
	hidden := 0   // inside <script>, <style> and the like, whose text is not shown
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			switch z.Err() {
			case io.EOF:
				return nil
			case html.ErrBufferExceeded:
				return invalid("the HTML has a tag or a run of text over %s; split it into smaller pages", size(int64(2*maxText)))
			}
			return invalid("the HTML cannot be read: %v", z.Err())
		case html.StartTagToken, html.SelfClosingTagToken:
			if elements++; elements > maxHTMLElements {
				return invalid("the HTML has more than %d elements; split it into smaller pages", maxHTMLElements)
			}
			name, _ := z.TagName()
			if isHiddenText(atom.Lookup(name)) && tt == html.StartTagToken {
				hidden++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if isHiddenText(atom.Lookup(name)) && hidden > 0 {
				hidden--
			}
		case html.TextToken:
			if hidden > 0 {
				continue
			}
			for _, c := range z.Raw() {
				switch {
				case c > ' ':
					text++
					space = false
				case !space:
					text++
					space = true
				}
			}
			if text > maxText {
				return invalid("the HTML has more than %s of text; split it into smaller pages", size(int64(maxText)))
			}
		}
	}
}

func isHiddenText(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Textarea, atom.Title:
		return true
	}
	return false
}

func htmlToText(ctx context.Context, conv *converter.Converter, body []byte, pageURL string, out *textSink) (string, error) {
	// Bytes that decode to binary junk are not a page.
	if binary, err := looksBinary(htmlReader(body)); err != nil || binary {
		return "", invalid("the HTML is not text (it looks like binary data)")
	}
	if err := checkHTML(ctx, body, min(out.max, maxHTMLTextBytes)); err != nil {
		return "", err
	}
	root, err := html.Parse(htmlReader(body))
	if err != nil {
		return "", invalid("the HTML cannot be parsed: %v", err)
	}
	title := elementText(find(root, atom.Title))
	if title == "" {
		title = elementText(find(root, atom.H1))
	}
	stripNoise(root)

	var base *url.URL
	if pageURL != "" {
		if u, err := url.Parse(pageURL); err == nil && u.IsAbs() {
			base = u
		}
	}
	content := mainContent(root, base)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var opts []converter.ConvertOptionFunc
	opts = append(opts, converter.WithContext(ctx))
	if base != nil {
		opts = append(opts, converter.WithDomain(base.Scheme+"://"+base.Host))
	}
	md, err := conv.ConvertNode(content, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", invalid("the HTML cannot be converted: %v", err)
	}
	_, err = out.Write(md)
	return title, err
}

// mainContent is readability's article when it finds one with enough text,
// else the page's <main> (or role=main) element, else its body.
func mainContent(root *html.Node, base *url.URL) *html.Node {
	p := readability.NewParser()
	p.Logger = slog.New(slog.DiscardHandler)
	if art, err := p.ParseDocument(root, base); err == nil && art.Node != nil {
		var text strings.Builder
		if art.RenderText(&text) == nil && len(strings.TrimSpace(text.String())) >= minArticleChars {
			return art.Node
		}
	}
	if n := findFunc(root, func(n *html.Node) bool {
		return n.DataAtom == atom.Main || attr(n, "role") == "main"
	}); n != nil {
		return n
	}
	if n := find(root, atom.Body); n != nil {
		return n
	}
	return root
}

// stripNoise removes what is never content: scripts, styles, navigation,
// page headers and footers outside the article, asides and hidden nodes.
func stripNoise(root *html.Node) {
	var drop []*html.Node
	var walk func(n *html.Node, inArticle bool)
	walk = func(n *html.Node, inArticle bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.CommentNode {
				drop = append(drop, c)
				continue
			}
			if c.Type != html.ElementNode {
				continue
			}
			role := attr(c, "role")
			switch {
			case c.DataAtom == atom.Script, c.DataAtom == atom.Style, c.DataAtom == atom.Noscript,
				c.DataAtom == atom.Nav, c.DataAtom == atom.Aside, c.DataAtom == atom.Iframe,
				c.DataAtom == atom.Template, c.DataAtom == atom.Svg,
				role == "navigation", role == "search", role == "complementary",
				hasAttr(c, "hidden"), attr(c, "aria-hidden") == "true":
				drop = append(drop, c)
				continue
			case !inArticle && (c.DataAtom == atom.Header || c.DataAtom == atom.Footer ||
				role == "banner" || role == "contentinfo"):
				drop = append(drop, c)
				continue
			}
			walk(c, inArticle || c.DataAtom == atom.Article || c.DataAtom == atom.Main || role == "main")
		}
	}
	walk(root, false)
	for _, n := range drop {
		n.Parent.RemoveChild(n)
	}
}

func find(n *html.Node, a atom.Atom) *html.Node {
	return findFunc(n, func(n *html.Node) bool { return n.DataAtom == a })
}

func findFunc(n *html.Node, ok func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && ok(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findFunc(c, ok); f != nil {
			return f
		}
	}
	return nil
}

func elementText(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return oneLine(b.String())
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.ToLower(strings.TrimSpace(a.Val))
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}
