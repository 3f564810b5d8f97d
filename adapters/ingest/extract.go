package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/text/encoding/charmap"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.DocumentExtractor = (*Extractor)(nil)

// Extractor defaults.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxFileBytes     = 50 << 20
	DefaultMaxTextBytes     = 16 << 20
	DefaultMaxUnzippedBytes = 200 << 20
	DefaultMaxZipEntries    = 5000
	DefaultMaxCSVRows       = 50_000
)

// supported lists the accepted extensions, for messages.
const supported = ".md, .txt, .html, .pdf, .docx or .csv"

// ExtractorOptions configure an Extractor. Zero values mean the defaults.
type ExtractorOptions struct {
	// PDFToText is the path of poppler's pdftotext; "" looks it up on PATH.
	// When it is not found, PDFs are read by a pure-Go reader, which gives
	// worse text for complex layouts and some fonts.
	PDFToText string
	// PureGoPDF forces the pure-Go PDF reader even when pdftotext exists.
	PureGoPDF bool
	// Timeout caps one extraction (DefaultTimeout). A file that takes
	// longer is refused as too complex; the caller's own cancellation is
	// returned as the context's error.
	Timeout time.Duration
	// MaxFileBytes refuses larger files (DefaultMaxFileBytes).
	MaxFileBytes int
	// MaxTextBytes refuses files whose extracted text is larger
	// (DefaultMaxTextBytes).
	MaxTextBytes int
	// MaxUnzippedBytes caps the total uncompressed size of a .docx's
	// entries (DefaultMaxUnzippedBytes), against zip bombs.
	MaxUnzippedBytes int64
	// MaxZipEntries caps the entries of a .docx (DefaultMaxZipEntries).
	MaxZipEntries int
	// MaxCSVRows caps the data rows of a .csv (DefaultMaxCSVRows).
	MaxCSVRows int
	// Logger receives warnings (pdftotext failing to start); nil means
	// slog.Default().
	Logger *slog.Logger
}

// Extractor extracts the text of uploaded files as Markdown-like text. It
// implements ports.DocumentExtractor and is safe for concurrent use.
type Extractor struct {
	opts      ExtractorOptions
	pdftotext string // "" when the pure-Go reader is used
	html      *converter.Converter
	log       *slog.Logger
}

// NewExtractor builds an Extractor, resolving pdftotext once.
func NewExtractor(opts ExtractorOptions) *Extractor {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	if opts.MaxUnzippedBytes <= 0 {
		opts.MaxUnzippedBytes = DefaultMaxUnzippedBytes
	}
	if opts.MaxZipEntries <= 0 {
		opts.MaxZipEntries = DefaultMaxZipEntries
	}
	if opts.MaxCSVRows <= 0 {
		opts.MaxCSVRows = DefaultMaxCSVRows
	}
	e := &Extractor{opts: opts, html: newHTMLConverter(), log: opts.Logger}
	if e.log == nil {
		e.log = slog.Default()
	}
	if !opts.PureGoPDF {
		name := opts.PDFToText
		if name == "" {
			name = "pdftotext"
		}
		if p, err := exec.LookPath(name); err == nil {
			e.pdftotext = p
		} else if opts.PDFToText != "" {
			e.log.Warn("ingest: pdftotext not usable; PDFs will be read by the pure-Go reader", "path", opts.PDFToText, "error", err)
		}
	}
	return e
}

// UsesPDFToText reports whether PDFs go through pdftotext.
func (e *Extractor) UsesPDFToText() bool { return e.pdftotext != "" }

// Extract implements ports.DocumentExtractor.
func (e *Extractor) Extract(ctx context.Context, filename string, body []byte) (domain.Document, error) {
	base := baseName(filename)
	ext := strings.ToLower(extOf(base))
	switch ext {
	case ".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".docx", ".csv":
	case "":
		return domain.Document{}, invalid("the file name has no extension; use %s", supported)
	default:
		return domain.Document{}, invalid("%s files are not supported; use %s", ext, supported)
	}
	if len(body) == 0 {
		return domain.Document{}, invalid("the file is empty")
	}
	if len(body) > e.opts.MaxFileBytes {
		return domain.Document{}, invalid("the file is %s; the limit is %s", size(int64(len(body))), size(int64(e.opts.MaxFileBytes)))
	}
	if err := ctx.Err(); err != nil {
		return domain.Document{}, fmt.Errorf("extract %s: %w", base, err)
	}
	cctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()

	var doc domain.Document
	var err error
	switch ext {
	case ".md", ".markdown", ".txt":
		var s string
		s, err = decodeText(body, ext)
		doc.Text = s
		if ext != ".txt" {
			var meta string
			meta, doc.Text = splitFrontMatter(s)
			doc.Title = frontMatterTitle(meta)
			if doc.Title == "" {
				doc.Title = markdownTitle(doc.Text)
			}
		}
	case ".html", ".htm":
		doc, err = e.htmlDocument(cctx, body, "")
	case ".pdf":
		doc, err = e.pdf(cctx, body)
	case ".docx":
		doc, err = e.docx(cctx, body)
	case ".csv":
		doc, err = e.csv(cctx, body)
	}
	if err != nil {
		if ctx.Err() != nil {
			return domain.Document{}, fmt.Errorf("extract %s: %w", base, ctx.Err())
		}
		if cctx.Err() != nil {
			return domain.Document{}, invalid("reading the file took longer than %s; split it into smaller files", e.opts.Timeout)
		}
		return domain.Document{}, err
	}
	return e.finish(doc, base, ext)
}

// finish tidies the text, checks there is some, and names the document.
func (e *Extractor) finish(doc domain.Document, base, ext string) (domain.Document, error) {
	doc.Text = tidy(doc.Text)
	if doc.Text == "" {
		switch ext {
		case ".pdf":
			return domain.Document{}, invalid("the PDF has no selectable text (is it a scan?); run it through OCR or upload a text version")
		default:
			return domain.Document{}, invalid("the file has no text")
		}
	}
	if len(doc.Text) > e.opts.MaxTextBytes {
		return domain.Document{}, invalid("the file's text is over %s; split it into smaller files", size(int64(e.opts.MaxTextBytes)))
	}
	doc.Title = oneLine(doc.Title)
	if doc.Title == "" {
		doc.Title = strings.TrimSuffix(base, extOf(base))
		if doc.Title == "" {
			doc.Title = base
		}
	}
	return doc, nil
}

// invalid is a caller-facing error about the uploaded file.
func invalid(format string, args ...any) error {
	return domain.InvalidField("file", fmt.Sprintf(format, args...))
}

func baseName(name string) string {
	// Browsers on Windows may send a full path with backslashes.
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSpace(name)
}

func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[i:]
	}
	return ""
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// errNotText marks bytes that are not text in any encoding we read.
var errNotText = errors.New("not text")

// decodeText turns the bytes of a text file into UTF-8: UTF-8 (with or
// without a byte-order mark), UTF-16 with a byte-order mark, and otherwise
// Windows-1252, the usual encoding of legacy files. Bytes with NULs or many
// control characters are refused as binary.
func decodeText(body []byte, ext string) (string, error) {
	s, err := toUTF8(body)
	if err != nil {
		return "", invalid("the %s file is not text (it looks like binary data); upload a plain-text file in UTF-8", ext)
	}
	return s, nil
}

func toUTF8(body []byte) (string, error) {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		body = body[3:]
	case bytes.HasPrefix(body, []byte{0xFF, 0xFE}), bytes.HasPrefix(body, []byte{0xFE, 0xFF}):
		return fromUTF16(body)
	}
	var s string
	if utf8.Valid(body) {
		s = string(body)
	} else {
		d, err := charmap.Windows1252.NewDecoder().Bytes(body)
		if err != nil {
			return "", errNotText
		}
		s = string(d)
	}
	if looksBinary(s) {
		return "", errNotText
	}
	return s, nil
}

func fromUTF16(body []byte) (string, error) {
	little := body[0] == 0xFF
	body = body[2:]
	if len(body)%2 != 0 {
		return "", errNotText
	}
	u := make([]uint16, len(body)/2)
	for i := range u {
		if little {
			u[i] = uint16(body[2*i]) | uint16(body[2*i+1])<<8
		} else {
			u[i] = uint16(body[2*i])<<8 | uint16(body[2*i+1])
		}
	}
	s := string(utf16.Decode(u))
	if looksBinary(s) {
		return "", errNotText
	}
	return s, nil
}

// looksBinary: any NUL, or more than 1 in 100 characters a control
// character other than tab, newline, carriage return and form feed.
func looksBinary(s string) bool {
	if strings.IndexByte(s, 0) >= 0 {
		return true
	}
	var ctl, n int
	for _, r := range s {
		n++
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' && r != '\f') {
			ctl++
		}
	}
	return ctl*100 > n
}

// tidy normalises line endings, drops trailing spaces and control
// characters, and collapses runs of blank lines into one.
func tidy(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n':
			return r
		case '\r', '\f', '\u2028', '\u2029': // old Mac line ends, page breaks, Unicode line separators
			return '\n'
		case '\v', '\u00a0':
			return ' '
		case '\ufeff', '\u200b', '\u00ad', utf8.RuneError:
			return -1
		}
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	var b strings.Builder
	b.Grow(len(s))
	blank := false
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
		if line == "" {
			blank = true
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
			if blank {
				b.WriteByte('\n')
			}
		}
		blank = false
		b.WriteString(line)
	}
	return b.String()
}

// runCtx runs extract, which may be slow and blind to ctx (readability,
// the pure-Go PDF reader), in a goroutine, and returns when it finishes or
// ctx ends, whichever comes first; an abandoned run finishes in the
// background. A panic (the PDF reader panics on some malformed files)
// becomes the error onPanic.
func runCtx(ctx context.Context, onPanic error, extract func() (domain.Document, error)) (domain.Document, error) {
	type result struct {
		doc domain.Document
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if r := recover(); r != nil {
				res = result{err: onPanic}
			}
			done <- res
		}()
		res.doc, res.err = extract()
	}()
	select {
	case res := <-done:
		return res.doc, res.err
	case <-ctx.Done():
		return domain.Document{}, ctx.Err()
	}
}

// markdownTitle is the text of the first level-1 heading ("# Title") of
// Markdown outside fenced code, or "".
func markdownTitle(s string) string {
	fence := ""
	for line := range strings.SplitSeq(s, "\n") {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if strings.HasPrefix(t, "# ") {
			return strings.TrimSpace(strings.TrimRight(t[2:], "# "))
		}
	}
	return ""
}

// splitFrontMatter separates a leading YAML front matter block ("---"
// lines around it), which Markdown would otherwise read as a setext
// heading, from the body.
func splitFrontMatter(s string) (meta, body string) {
	t := strings.TrimPrefix(strings.ReplaceAll(s, "\r\n", "\n"), "\ufeff")
	if !strings.HasPrefix(t, "---\n") {
		return "", s
	}
	rest := t[len("---\n"):]
	for _, end := range []string{"\n---\n", "\n...\n"} {
		if i := strings.Index(rest, end); i >= 0 {
			return rest[:i], rest[i+len(end):]
		}
	}
	if strings.HasSuffix(rest, "\n---") {
		return strings.TrimSuffix(rest, "\n---"), ""
	}
	return "", s
}

// frontMatterTitle reads a top-level "title:" of YAML front matter.
func frontMatterTitle(meta string) string {
	for line := range strings.SplitSeq(meta, "\n") {
		if v, ok := strings.CutPrefix(line, "title:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}
