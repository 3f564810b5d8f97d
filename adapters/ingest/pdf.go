package ingest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ledongthuc/pdf"

	"github.com/conciergehq/concierge/core/domain"
)

const (
	msgPDFDamaged   = "the PDF is damaged or incomplete and cannot be read; export or download it again and re-upload"
	msgPDFEncrypted = "the PDF is password-protected or encrypted; remove the protection and upload it again"
)

// errNoStart says pdftotext could not be run at all (not that it refused
// the file), so the pure-Go reader takes over.
var errNoStart = errors.New("pdftotext did not start")

func (e *Extractor) pdf(ctx context.Context, body []byte) (domain.Document, error) {
	if !bytes.Contains(body[:min(len(body), 1024)], []byte("%PDF-")) {
		return domain.Document{}, invalid("the file is not a PDF (it has no %%PDF header); check the file or its extension")
	}
	if e.pdftotext != "" {
		text, err := e.runPDFToText(ctx, body)
		if err == nil {
			return domain.Document{Title: pdfInfoTitle(body), Text: text}, nil
		}
		if !errors.Is(err, errNoStart) {
			return domain.Document{}, err
		}
		e.log.Warn("ingest: pdftotext failed to start; using the pure-Go PDF reader", "path", e.pdftotext, "error", err)
	}
	return pureGoPDF(ctx, body)
}

// runPDFToText runs poppler's pdftotext in its default reading-order mode.
// -layout is not used: it keeps the physical layout, so two columns come out
// interleaved line by line, which is worse for chunking than the default
// mode's reading order (one column, then the next).
func (e *Extractor) runPDFToText(ctx context.Context, body []byte) (string, error) {
	// pdftotext needs a seekable input: a temporary file, not stdin.
	f, err := os.CreateTemp("", "ingest-*.pdf")
	if err != nil {
		return "", fmt.Errorf("%w: temporary file: %w", errNoStart, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(body); err != nil {
		f.Close()
		return "", fmt.Errorf("%w: temporary file: %w", errNoStart, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("%w: temporary file: %w", errNoStart, err)
	}

	out := &capped{max: e.opts.MaxTextBytes * 2}
	errOut := &capped{max: 4096}
	cmd := exec.CommandContext(ctx, e.pdftotext, "-enc", "UTF-8", "-q", f.Name(), "-")
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		// Exit codes: 1 the file could not be opened (damaged, or a
		// password), 3 permissions; anything else is the file's fault too.
		stderr := strings.ToLower(errOut.String())
		if exit.ExitCode() == 3 || strings.Contains(stderr, "password") || strings.Contains(stderr, "encrypt") {
			return "", invalid(msgPDFEncrypted)
		}
		return "", invalid(msgPDFDamaged)
	default:
		return "", fmt.Errorf("%w: %w", errNoStart, err)
	}
	if out.over {
		return "", invalid("the file's text is over %s; split it into smaller files", size(int64(e.opts.MaxTextBytes)))
	}
	return out.String(), nil
}

// capped keeps the first max bytes written to it and notes the overflow,
// without failing the writer (which would stop pdftotext with a broken pipe
// and hide its exit status).
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room < len(p) {
		c.over = true
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// pdfInfoTitle is the Title of the document information dictionary, or "".
func pdfInfoTitle(body []byte) (title string) {
	defer func() {
		if recover() != nil {
			title = ""
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(pdfHeaderFix(body)), int64(len(body)))
	if err != nil {
		return ""
	}
	return cleanPDFTitle(r.Trailer().Key("Info").Key("Title").Text())
}

func cleanPDFTitle(t string) string {
	t = oneLine(t)
	t = strings.TrimPrefix(t, "Microsoft Word - ")
	if strings.EqualFold(t, "untitled") || strings.HasSuffix(strings.ToLower(t), ".doc") || strings.HasSuffix(strings.ToLower(t), ".docx") {
		return ""
	}
	return t
}

// pdfHeaderFix presents PDF 2.0 files as 1.7, the newest version the
// pure-Go reader's header check accepts; the syntax it reads is the same.
func pdfHeaderFix(body []byte) []byte {
	if !bytes.HasPrefix(body, []byte("%PDF-2.")) {
		return body
	}
	b := bytes.Clone(body)
	copy(b, "%PDF-1.7")
	return b
}

// pureGoPDF reads the PDF with github.com/ledongthuc/pdf, which panics on
// some malformed input and takes no context: readPDF checks ctx between
// pages, and runCtx recovers and stops waiting when ctx ends.
func pureGoPDF(ctx context.Context, body []byte) (domain.Document, error) {
	return runCtx(ctx, invalid(msgPDFDamaged), func() (domain.Document, error) { return readPDF(ctx, body) })
}

func readPDF(ctx context.Context, body []byte) (domain.Document, error) {
	fixed := pdfHeaderFix(body)
	r, err := pdf.NewReader(bytes.NewReader(fixed), int64(len(fixed)))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(strings.ToLower(err.Error()), "encrypt") {
			return domain.Document{}, invalid(msgPDFEncrypted)
		}
		return domain.Document{}, invalid(msgPDFDamaged)
	}
	var lines []pdfLine
	pages, failed := r.NumPage(), 0
	for i := 1; i <= pages; i++ {
		if err := ctx.Err(); err != nil {
			return domain.Document{}, err
		}
		pl, ok := pageLines(r.Page(i))
		if !ok {
			failed++
			continue
		}
		if len(lines) > 0 && len(pl) > 0 {
			pl[0].gapBefore = true
		}
		lines = append(lines, pl...)
	}
	if pages == 0 || failed == pages {
		return domain.Document{}, invalid(msgPDFDamaged)
	}
	text, heading := layoutPDF(lines)
	title := cleanPDFTitle(r.Trailer().Key("Info").Key("Title").Text())
	if title == "" {
		title = heading
	}
	return domain.Document{Title: title, Text: text}, nil
}

// pdfLine is one line of text on a page.
type pdfLine struct {
	text      string
	size      float64 // the font size of most of its characters
	gapBefore bool    // a paragraph break before it
}

// pageLines rebuilds lines from the page's positioned glyphs, in content
// order: a glyph on another baseline starts a line, a horizontal gap wider
// than a fraction of the font size is a space (many producers position
// words instead of writing spaces), and a vertical jump of more than about
// a line and a half starts a paragraph. ok is false when the page cannot
// be read.
func pageLines(p pdf.Page) (lines []pdfLine, ok bool) {
	defer func() {
		if recover() != nil {
			lines, ok = nil, false
		}
	}()
	if p.V.IsNull() {
		return nil, true
	}
	var cur *strings.Builder
	var curY, curSize, lastX, lastEnd float64
	sizes := map[float64]int{}
	flush := func(gap bool) {
		if cur == nil {
			return
		}
		if t := strings.TrimSpace(cur.String()); t != "" {
			lines = append(lines, pdfLine{text: t, size: dominant(sizes), gapBefore: gap})
		}
		cur = nil
		clear(sizes)
	}
	pendingGap := false
	for _, g := range p.Content().Text {
		if g.S == "" || g.S == "\n" {
			continue
		}
		size := math.Abs(g.FontSize)
		if size == 0 {
			size = 10
		}
		if cur != nil && math.Abs(g.Y-curY) > math.Max(size, curSize)*0.5 {
			// A drop of more than ~1.6 lines, or a climb (a new column or
			// a footnote), separates paragraphs.
			drop := curY - g.Y
			gap := drop > 1.6*math.Max(size, curSize) || drop < 0
			flush(pendingGap)
			pendingGap = gap
		}
		if cur == nil {
			cur = &strings.Builder{}
			curY, curSize, lastX, lastEnd = g.Y, size, g.X, g.X
		} else {
			gap := g.X - lastEnd
			spaced := strings.HasSuffix(cur.String(), " ") || g.S == " "
			if !spaced && (gap > 0.15*size || g.X < lastX-size) {
				cur.WriteByte(' ')
			}
		}
		cur.WriteString(g.S)
		sizes[math.Round(size*2)/2] += len(g.S)
		lastX, lastEnd = g.X, g.X+g.W
		curSize = math.Max(curSize, size)
	}
	flush(pendingGap)
	return lines, true
}

// dominant is the key with the largest count (the largest key on ties).
func dominant(counts map[float64]int) float64 {
	best, n := 0.0, -1
	for k, c := range counts {
		if c > n || c == n && k > best {
			best, n = k, c
		}
	}
	return best
}

// layoutPDF joins lines into Markdown: paragraphs separated by blank lines,
// and short lines set noticeably larger than the body text as '#' headings
// (the largest size level 1, the next level 2, the rest level 3). It also
// returns the first top-level heading, for a title.
func layoutPDF(lines []pdfLine) (string, string) {
	chars := map[float64]int{}
	for _, l := range lines {
		chars[l.size] += len(l.text)
	}
	body := dominant(chars)
	isHeading := func(l pdfLine) bool {
		return body > 0 && l.size >= body*1.2 && len(l.text) <= 150 && strings.IndexFunc(l.text, unicode.IsLetter) >= 0
	}
	var headingSizes []float64
	for _, l := range lines {
		if isHeading(l) && !slices.Contains(headingSizes, l.size) {
			headingSizes = append(headingSizes, l.size)
		}
	}
	slices.SortFunc(headingSizes, func(a, b float64) int { return cmp.Compare(b, a) })
	level := func(size float64) int { return min(slices.Index(headingSizes, size)+1, 3) }

	var b strings.Builder
	var title string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if isHeading(l) {
			// A heading that wraps continues on lines of the same size.
			text := l.text
			for i+1 < len(lines) && lines[i+1].size == l.size && !lines[i+1].gapBefore && isHeading(lines[i+1]) {
				i++
				text += " " + lines[i].text
			}
			lv := level(l.size)
			if title == "" && lv == 1 {
				title = text
			}
			b.WriteString("\n\n" + strings.Repeat("#", lv) + " " + text + "\n\n")
			continue
		}
		if l.gapBefore || i > 0 && isHeading(lines[i-1]) {
			b.WriteString("\n\n")
		} else if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.text)
	}
	return b.String(), title
}
