package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/text/encoding/charmap"
	xunicode "golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

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
	DefaultMaxPDFPages      = 5_000
	DefaultMaxPDFStream     = 64 << 20
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
	// MaxPDFPages caps the pages of a PDF read by the pure-Go reader
	// (DefaultMaxPDFPages).
	MaxPDFPages int
	// MaxPDFStreamBytes caps the decoded size of each stream of a PDF read
	// by the pure-Go reader (DefaultMaxPDFStream), against flate bombs.
	MaxPDFStreamBytes int64
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
	if opts.MaxPDFPages <= 0 {
		opts.MaxPDFPages = DefaultMaxPDFPages
	}
	if opts.MaxPDFStreamBytes <= 0 {
		opts.MaxPDFStreamBytes = DefaultMaxPDFStream
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

	// Every extractor writes its text into out, which tidies it and stops
	// the extraction once it is over the text cap.
	out := newTextSink(e.opts.MaxTextBytes)
	var title string
	var err error
	switch ext {
	case ".md", ".markdown", ".txt":
		title, err = e.plainText(cctx, body, ext, out)
	case ".html", ".htm":
		title, err = e.htmlDocument(cctx, body, "", out)
	case ".pdf":
		title, err = e.pdf(cctx, body, out)
	case ".docx":
		title, err = e.docx(cctx, body, out)
	case ".csv":
		err = e.csv(cctx, body, out)
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
	text := out.String()
	if text == "" {
		if ext == ".pdf" {
			return domain.Document{}, invalid("the PDF has no selectable text (is it a scan?); run it through OCR or upload a text version")
		}
		return domain.Document{}, invalid("the file has no text")
	}
	if title = cleanTitle(title); title == "" {
		title = strings.TrimSuffix(base, extOf(base))
		if title == "" {
			title = base
		}
	}
	return domain.Document{Title: title, Text: text}, nil
}

// plainText reads .md, .markdown and .txt files. Markdown's YAML front
// matter is left out and its title: names the document, else its first
// '#' heading does.
func (e *Extractor) plainText(ctx context.Context, body []byte, ext string, out *textSink) (string, error) {
	r, err := textReader(body, ext)
	if err != nil {
		return "", err
	}
	var title string
	if ext != ".txt" {
		if title, r, err = skipFrontMatter(r); err != nil {
			return "", err
		}
	}
	if err := copyText(ctx, out, r); err != nil {
		return "", err
	}
	if ext != ".txt" && title == "" {
		title = markdownTitle(out.String())
	}
	return title, nil
}

// copyText moves decoded text into out in pieces, checking ctx between them.
func copyText(ctx context.Context, out *textSink, r io.Reader) error {
	buf := make([]byte, 64<<10)
	for empty := 0; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(buf)
		if n > 0 {
			empty = 0
			if _, werr := out.Write(buf[:n]); werr != nil {
				return werr
			}
		} else if empty++; empty > 100 && err == nil {
			return io.ErrNoProgress
		}
		if err == io.EOF {
			return out.Close()
		}
		if err != nil {
			return err
		}
	}
}

// maxTitleBytes caps a document's title: it comes from the file (a <title>,
// a PDF's Info dictionary, a .docx's properties), which may say anything.
const maxTitleBytes = 300

// cleanTitle makes a title one line of valid UTF-8 without control
// characters, at most maxTitleBytes long (cut at a character boundary).
func cleanTitle(t string) string {
	if len(t) > 4*maxTitleBytes {
		t = t[:4*maxTitleBytes]
	}
	t = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(t, ""))
	t = oneLine(t)
	if len(t) > maxTitleBytes {
		cut := maxTitleBytes
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = strings.TrimSpace(t[:cut])
	}
	return t
}

// isValidation reports whether err is already a message for the uploader.
func isValidation(err error) bool {
	var ve *domain.ValidationError
	return errors.As(err, &ve)
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

// textReader returns the text of a text file as UTF-8: UTF-8 (with or
// without a byte-order mark), UTF-16 with a byte-order mark, and otherwise
// Windows-1252, the usual encoding of legacy files. Bytes that look binary
// (any NUL, or many control characters) are refused. The text is decoded as
// it is read, not copied whole.
func textReader(body []byte, ext string) (io.Reader, error) {
	r := decoder(body)
	if r == nil {
		return nil, notText(ext)
	}
	binary, err := looksBinary(r)
	if err != nil || binary {
		return nil, notText(ext)
	}
	return decoder(body), nil
}

func notText(ext string) error {
	return invalid("the %s file is not text (it looks like binary data); upload a plain-text file in UTF-8", ext)
}

// decoder returns a reader of body decoded to UTF-8, or nil when body is
// UTF-16 of an odd length.
func decoder(body []byte) io.Reader {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		body = body[3:]
	case bytes.HasPrefix(body, []byte{0xFF, 0xFE}), bytes.HasPrefix(body, []byte{0xFE, 0xFF}):
		if len(body)%2 != 0 {
			return nil
		}
		order := xunicode.LittleEndian
		if body[0] == 0xFE {
			order = xunicode.BigEndian
		}
		return transform.NewReader(bytes.NewReader(body), xunicode.UTF16(order, xunicode.ExpectBOM).NewDecoder())
	}
	if utf8.Valid(body) {
		return bytes.NewReader(body)
	}
	return charmap.Windows1252.NewDecoder().Reader(bytes.NewReader(body))
}

// looksBinary reads decoded text and reports whether it is binary data: any
// NUL, or more than 1 in 100 characters a control character other than
// tab, newline, carriage return and form feed, or a replacement character.
func looksBinary(r io.Reader) (bool, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var ctl, n int
	for {
		c, _, err := br.ReadRune()
		if err == io.EOF {
			return ctl*100 > n, nil
		}
		if err != nil {
			return false, err
		}
		n++
		switch {
		case c == 0:
			return true, nil
		case c == utf8.RuneError, unicode.IsControl(c) && c != '\t' && c != '\n' && c != '\r' && c != '\f':
			ctl++
		}
	}
}

// runCtx runs extract, which may be slow and blind to ctx (readability,
// the pure-Go PDF reader), in a goroutine, and returns when it finishes or
// ctx ends, whichever comes first; an abandoned run finishes in the
// background. A panic (the PDF reader panics on some malformed files)
// becomes the error onPanic.
func runCtx[T any](ctx context.Context, onPanic error, extract func() (T, error)) (T, error) {
	type result struct {
		v   T
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
		res.v, res.err = extract()
	}()
	select {
	case res := <-done:
		return res.v, res.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
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

// maxFrontMatter is how far into a Markdown file its front matter may end.
const maxFrontMatter = 64 << 10

// skipFrontMatter reads past a leading YAML front matter block ("---"
// lines around it, ending within maxFrontMatter bytes), which Markdown would
// otherwise read as a setext heading, and returns its title: and the rest.
func skipFrontMatter(r io.Reader) (string, io.Reader, error) {
	head := make([]byte, maxFrontMatter)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", nil, err
	}
	whole := n < len(head)
	t := strings.TrimPrefix(strings.ReplaceAll(string(head[:n]), "\r\n", "\n"), "\ufeff")
	rest := io.MultiReader(bytes.NewReader(head[:n]), r)
	if !strings.HasPrefix(t, "---\n") {
		return "", rest, nil
	}
	t = t[len("---\n"):]
	for _, end := range []string{"\n---\n", "\n...\n"} {
		if i := strings.Index(t, end); i >= 0 {
			return frontMatterTitle(t[:i]), io.MultiReader(strings.NewReader(t[i+len(end):]), r), nil
		}
	}
	if whole && strings.HasSuffix(t, "\n---") {
		return frontMatterTitle(strings.TrimSuffix(t, "\n---")), strings.NewReader(""), nil
	}
	return "", rest, nil
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
