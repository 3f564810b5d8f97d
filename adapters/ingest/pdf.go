package ingest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/conciergehq/concierge/adapters/ingest/internal/pdf"
)

const (
	msgPDFDamaged   = "the PDF is damaged or incomplete and cannot be read; export or download it again and re-upload"
	msgPDFEncrypted = "the PDF is password-protected or encrypted; remove the protection and upload it again"
)

// errNoStart says pdftotext could not be run at all (not that it refused
// the file), so the pure-Go reader takes over.
var errNoStart = errors.New("pdftotext did not start")

func (e *Extractor) pdf(ctx context.Context, body []byte, out *textSink) (string, error) {
	if !bytes.Contains(body[:min(len(body), 1024)], []byte("%PDF-")) {
		return "", invalid("the file is not a PDF (it has no %%PDF header); check the file or its extension")
	}
	if e.pdftotext != "" {
		err := e.runPDFToText(ctx, body, out)
		if err == nil {
			return pdfInfoTitle(ctx, body, e.pdfLimits()), nil
		}
		if !errors.Is(err, errNoStart) {
			return "", err
		}
		e.log.Warn("ingest: pdftotext failed to start; using the pure-Go PDF reader", "path", e.pdftotext, "error", err)
	}
	return e.pureGoPDF(ctx, body, out)
}

func (e *Extractor) pdfLimits() pdf.Limits {
	return pdf.Limits{MaxStreamBytes: e.opts.MaxPDFStreamBytes}
}

// runPDFToText runs poppler's pdftotext in its default reading-order mode,
// its output going into out as it comes: when that is over the text cap,
// the process is stopped. -layout is not used: it keeps the physical
// layout, so two columns come out interleaved line by line, which is worse
// for chunking than the default mode's reading order (one column, then the
// next).
func (e *Extractor) runPDFToText(ctx context.Context, body []byte, out *textSink) error {
	// pdftotext needs a seekable input: a temporary file, not stdin.
	f, err := os.CreateTemp("", "ingest-*.pdf")
	if err != nil {
		return fmt.Errorf("%w: temporary file: %w", errNoStart, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(body); err != nil {
		f.Close()
		return fmt.Errorf("%w: temporary file: %w", errNoStart, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: temporary file: %w", errNoStart, err)
	}

	errOut := &capped{max: 4096}
	cmd := exec.CommandContext(ctx, e.pdftotext, "-enc", "UTF-8", "-q", f.Name(), "-")
	cmd.Stderr = errOut
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%w: %w", errNoStart, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %w", errNoStart, err)
	}
	copyErr := copyText(ctx, out, stdout)
	if copyErr != nil {
		// Over the cap (or cancelled): the rest of the text is not wanted.
		_ = cmd.Process.Kill()
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if copyErr != nil {
		return copyErr
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		// Exit codes: 1 the file could not be opened (damaged, or a
		// password), 3 permissions; anything else is the file's fault too.
		stderr := strings.ToLower(errOut.String())
		if exit.ExitCode() == 3 || strings.Contains(stderr, "password") || strings.Contains(stderr, "encrypt") {
			return invalid(msgPDFEncrypted)
		}
		return invalid(msgPDFDamaged)
	default:
		return fmt.Errorf("%w: %w", errNoStart, err)
	}
	return nil
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

// ctxReaderAt fails reads once ctx is done. The PDF reader takes no
// context and reads the file as it goes: a run abandoned at the time cap
// (runCtx) stops at its next read instead of running on.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// openPDF opens body with the PDF reader, within lim.
func openPDF(ctx context.Context, body []byte, lim pdf.Limits) (*pdf.Reader, error) {
	fixed := pdfHeaderFix(body)
	return pdf.NewReader(ctxReaderAt{ctx, bytes.NewReader(fixed)}, int64(len(fixed)), lim)
}

// pdfInfoTitle is the Title of the document information dictionary, or "".
func pdfInfoTitle(ctx context.Context, body []byte, lim pdf.Limits) (title string) {
	defer func() {
		if recover() != nil {
			title = ""
		}
	}()
	r, err := openPDF(ctx, body, lim)
	if err != nil {
		return ""
	}
	return cleanPDFTitle(r.Trailer().Key("Info").Key("Title").Text())
}

func cleanPDFTitle(t string) string {
	t = cleanTitle(t)
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

// pdfLimitError is the message of a PDF over one of the reader's limits.
func (e *Extractor) pdfLimitError(le *pdf.LimitError) error {
	switch le.What {
	case "stream":
		return invalid("the PDF has a stream that expands to more than %s; export it again (print to PDF) or split it into smaller files", size(le.Limit))
	case "objects":
		return invalid("the PDF has more than %d objects; export it again (print to PDF) or split it into smaller files", le.Limit)
	}
	return invalid("the PDF has an object or a page with more than %d values; export it again (print to PDF) or split it into smaller files", le.Limit)
}

// pureGoPDF reads the PDF with the pure-Go reader, which panics on
// malformed input and takes no context: reads fail once ctx is done
// (ctxReaderAt), the walk checks ctx, and runCtx recovers and stops
// waiting when ctx ends.
func (e *Extractor) pureGoPDF(ctx context.Context, body []byte, out *textSink) (string, error) {
	return runCtx(ctx, invalid(msgPDFDamaged), func() (title string, err error) {
		defer func() {
			if r := recover(); r != nil {
				le, ok := r.(*pdf.LimitError)
				if !ok {
					panic(r)
				}
				title, err = "", e.pdfLimitError(le)
			}
		}()
		return e.readPDF(ctx, body, out)
	})
}

// readPDF lays out the text of every page in two passes over the pages,
// so that no more than one line is ever held: the first measures the font
// sizes of the whole document, which tell body text from headings, the
// second writes the text.
func (e *Extractor) readPDF(ctx context.Context, body []byte, out *textSink) (string, error) {
	r, err := openPDF(ctx, body, e.pdfLimits())
	if err != nil {
		var le *pdf.LimitError
		switch {
		case errors.As(err, &le):
			return "", e.pdfLimitError(le)
		case errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(strings.ToLower(err.Error()), "encrypt"):
			return "", invalid(msgPDFEncrypted)
		}
		return "", invalid(msgPDFDamaged)
	}
	pages, err := pdfPages(r, e.opts.MaxPDFPages)
	if err != nil {
		return "", err
	}
	if len(pages) == 0 {
		return "", invalid(msgPDFDamaged)
	}

	stats := newPDFStats()
	readable := make([]bool, len(pages))
	budget := e.opts.MaxTextBytes
	for i, p := range pages {
		ok, err := walkLines(ctx, p, i > 0, e.opts.MaxTextBytes, func(l pdfLine) error {
			// The text written is at least the lines and a line break
			// between them: past the cap here, it is past it there.
			if budget -= len(l.text) + 1; budget < -1 {
				return overCap(e.opts.MaxTextBytes)
			}
			stats.add(l)
			return nil
		})
		if err != nil {
			return "", err
		}
		readable[i] = ok
	}
	if !slices.Contains(readable, true) {
		return "", invalid(msgPDFDamaged)
	}

	lay := stats.layout(out, e.opts.MaxTextBytes)
	for i, p := range pages {
		if !readable[i] {
			continue
		}
		if _, err := walkLines(ctx, p, i > 0, e.opts.MaxTextBytes, lay.line); err != nil {
			return "", err
		}
	}
	if err := lay.flush(); err != nil {
		return "", err
	}
	title := cleanPDFTitle(r.Trailer().Key("Info").Key("Title").Text())
	if title == "" {
		title = lay.title
	}
	return title, nil
}

// maxPDFTreeDepth caps the nesting of the page tree, which may loop.
const maxPDFTreeDepth = 32

// pdfPages lists the pages in order, walking the page tree (whose counts
// may lie and whose links may loop) within maxPages pages.
func pdfPages(r *pdf.Reader, maxPages int) ([]pdf.Page, error) {
	var pages []pdf.Page
	nodes := 0
	var walk func(node pdf.Value, depth int) error
	walk = func(node pdf.Value, depth int) error {
		if nodes++; nodes > 4*maxPages+16 || depth > maxPDFTreeDepth {
			return invalid(msgPDFDamaged)
		}
		switch node.Key("Type").Name() {
		case "Page":
			if len(pages) >= maxPages {
				return invalid("the PDF has more than %d pages; split it into smaller files", maxPages)
			}
			pages = append(pages, pdf.Page{V: node})
		case "Pages":
			kids := node.Key("Kids")
			for i := range kids.Len() {
				if err := walk(kids.Index(i), depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(r.Trailer().Key("Root").Key("Pages"), 0); err != nil {
		return nil, err
	}
	return pages, nil
}

// pdfLine is one line of text on a page.
type pdfLine struct {
	text      string
	size      float64 // the font size of most of its characters
	gapBefore bool    // a paragraph break before it
}

// maxLineSizes caps the distinct font sizes counted in one line.
const maxLineSizes = 64

// walkLines rebuilds the page's lines from its positioned glyphs, in
// content order, and calls emit for each: a glyph on another baseline
// starts a line, a horizontal gap wider than a fraction of the font size
// is a space (many producers position words instead of writing spaces),
// and a vertical jump of more than about a line and a half starts a
// paragraph, as does a new page after the first (newPage). ok is false
// when the page cannot be read; an error from emit, ctx's end or a PDF
// over the reader's limits (a panic of *pdf.LimitError) stop the walk.
func walkLines(ctx context.Context, p pdf.Page, newPage bool, maxLine int, emit func(pdfLine) error) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, limit := r.(*pdf.LimitError); limit {
				panic(r)
			}
			ok = false
		}
	}()
	if p.V.IsNull() {
		return true, nil
	}
	var cur strings.Builder
	started := false
	var curY, curSize, lastX, lastEnd float64
	sizes := map[float64]int{}
	pageGap := newPage // the page's first line starts a paragraph
	flush := func(gap bool) {
		if !started {
			return
		}
		if t := strings.TrimSpace(cur.String()); t != "" {
			err = emit(pdfLine{text: t, size: dominant(sizes), gapBefore: gap || pageGap})
			pageGap = false
		}
		cur.Reset()
		started = false
		clear(sizes)
	}
	pendingGap := false
	glyphs := 0
	p.WalkText(func(g pdf.Text) bool {
		if glyphs++; glyphs%4096 == 0 && ctx.Err() != nil {
			err = ctx.Err()
			return false
		}
		if g.S == "" || g.S == "\n" {
			return true
		}
		fs := math.Abs(g.FontSize)
		if fs == 0 {
			fs = 10
		}
		if started && math.Abs(g.Y-curY) > math.Max(fs, curSize)*0.5 {
			// A drop of more than ~1.6 lines, or a climb (a new column or
			// a footnote), separates paragraphs.
			drop := curY - g.Y
			gap := drop > 1.6*math.Max(fs, curSize) || drop < 0
			flush(pendingGap)
			if err != nil {
				return false
			}
			pendingGap = gap
		}
		if !started {
			started = true
			curY, curSize, lastX, lastEnd = g.Y, fs, g.X, g.X
		} else {
			gap := g.X - lastEnd
			spaced := strings.HasSuffix(cur.String(), " ") || g.S == " "
			if !spaced && (gap > 0.15*fs || g.X < lastX-fs) {
				cur.WriteByte(' ')
			}
		}
		cur.WriteString(g.S)
		if cur.Len() > maxLine {
			err = overCap(maxLine)
			return false
		}
		key := math.Round(fs*2) / 2
		if _, ok := sizes[key]; ok || len(sizes) < maxLineSizes {
			sizes[key] += len(g.S)
		}
		lastX, lastEnd = g.X, g.X+g.W
		curSize = math.Max(curSize, fs)
		return true
	})
	if err != nil {
		return false, err
	}
	flush(pendingGap)
	return err == nil, err
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

// maxPDFSizes caps the distinct line font sizes a document's statistics
// keep; lines of other sizes are laid out as body text.
const maxPDFSizes = 4096

// pdfStats are what the layout needs to know of the whole document: the
// characters set in each font size, and the sizes of lines that could be
// headings (short, with a letter).
type pdfStats struct {
	chars    map[float64]int
	headings map[float64]bool
}

func newPDFStats() *pdfStats {
	return &pdfStats{chars: map[float64]int{}, headings: map[float64]bool{}}
}

func (s *pdfStats) add(l pdfLine) {
	if _, ok := s.chars[l.size]; !ok && len(s.chars) >= maxPDFSizes {
		return
	}
	s.chars[l.size] += len(l.text)
	if headingShape(l) {
		s.headings[l.size] = true
	}
}

func headingShape(l pdfLine) bool {
	return len(l.text) <= 150 && strings.IndexFunc(l.text, unicode.IsLetter) >= 0
}

// layout prepares the second pass: short lines set noticeably larger than
// the body text become '#' headings (the largest size level 1, the next
// level 2, the rest level 3).
func (s *pdfStats) layout(out *textSink, maxText int) *pdfLayout {
	body := dominant(s.chars)
	var sizes []float64
	for size := range s.headings {
		if _, ok := s.chars[size]; ok && body > 0 && size >= body*1.2 {
			sizes = append(sizes, size)
		}
	}
	slices.SortFunc(sizes, func(a, b float64) int { return cmp.Compare(b, a) })
	levels := make(map[float64]int, len(sizes))
	for i, size := range sizes {
		levels[size] = min(i+1, 3)
	}
	return &pdfLayout{out: out, body: body, levels: levels, max: maxText}
}

// pdfLayout joins lines into Markdown as they come: paragraphs separated
// by blank lines, headings on lines of their own. A heading that wraps
// continues on the next lines of the same size. title is the first
// top-level heading.
type pdfLayout struct {
	out  *textSink
	body float64
	// levels are the heading levels of the font sizes set as headings.
	levels map[float64]int
	max    int

	heading     strings.Builder // a heading being read, maybe over several lines
	headingSize float64
	afterHead   bool // the last thing written was a heading
	started     bool // something was written
	title       string
}

func (l *pdfLayout) isHeading(line pdfLine) bool {
	return headingShape(line) && l.levels[line.size] > 0
}

func (l *pdfLayout) line(line pdfLine) error {
	if l.heading.Len() > 0 {
		if l.isHeading(line) && line.size == l.headingSize && !line.gapBefore {
			l.heading.WriteString(" ")
			l.heading.WriteString(line.text)
			if l.heading.Len() > l.max {
				return overCap(l.max)
			}
			return nil
		}
		if err := l.flush(); err != nil {
			return err
		}
	}
	if l.isHeading(line) {
		l.heading.WriteString(line.text)
		l.headingSize = line.size
		return nil
	}
	sep := ""
	switch {
	case line.gapBefore || l.afterHead:
		sep = "\n\n"
	case l.started:
		sep = "\n"
	}
	l.afterHead, l.started = false, true
	if err := l.out.WriteString(sep); err != nil {
		return err
	}
	return l.out.WriteString(line.text)
}

// flush writes the heading being read, if any.
func (l *pdfLayout) flush() error {
	if l.heading.Len() == 0 {
		return nil
	}
	text := l.heading.String()
	l.heading.Reset()
	level := l.levels[l.headingSize]
	if l.title == "" && level == 1 {
		l.title = cleanTitle(text)
	}
	l.afterHead, l.started = true, true
	for _, s := range []string{"\n\n", strings.Repeat("#", level), " ", text, "\n\n"} {
		if err := l.out.WriteString(s); err != nil {
			return err
		}
	}
	return nil
}
