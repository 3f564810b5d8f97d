package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The WordprocessingML namespace; elements of others (drawing, markup
// compatibility, math) are walked through but never read as text.
const nsW = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

// Caps on the XML of a .docx, which is read as a stream of tokens: what a
// stream reader still holds in memory is one token, the open elements and
// the text not yet written out.
const (
	// maxXMLTokenBytes caps one token: a run of text, a tag with its
	// attributes, a comment. encoding/xml builds each token whole.
	maxXMLTokenBytes = 2 << 20
	// maxXMLDepth caps element nesting. Word documents nest a few dozen
	// deep (tables in tables, text boxes, content controls).
	maxXMLDepth = 256
	// maxDocxStyles caps the styles and list levels read from styles.xml
	// and numbering.xml; the rest of the part is not read (headings and
	// list markers of the styles past it are lost, not the text).
	maxDocxStyles = 20_000
)

// errTooBig says a zip part outgrew the remaining uncompressed budget.
var errTooBig = errors.New("over the size cap")

func (e *Extractor) docx(ctx context.Context, body []byte, out *textSink) (string, error) {
	// archive/zip reads the whole central directory before saying how many
	// entries there are, a few hundred bytes of memory per entry: count
	// their signatures first. (An upper bound: a stored zip inside the
	// document would count too.)
	if n := bytes.Count(body, []byte("PK\x01\x02")); n > e.opts.MaxZipEntries {
		return "", tooManyParts(n, e.opts.MaxZipEntries)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return "", invalid("the .docx file is not a Word document (it is not a zip archive); save it again as .docx and re-upload")
	}
	if len(zr.File) > e.opts.MaxZipEntries {
		return "", tooManyParts(len(zr.File), e.opts.MaxZipEntries)
	}
	// Declared sizes first: archive/zip refuses to read past an entry's
	// declared size, so their sum bounds what can be inflated.
	var total uint64
	parts := map[string]*zip.File{}
	for _, f := range zr.File {
		total += f.UncompressedSize64
		parts[f.Name] = f
	}
	if total > uint64(e.opts.MaxUnzippedBytes) {
		return "", invalid("the .docx file expands to more than %s; split it into smaller documents", size(e.opts.MaxUnzippedBytes))
	}
	main := parts["word/document.xml"]
	if main == nil {
		return "", invalid("the .docx file has no document body (word/document.xml); save it again from Word and re-upload")
	}
	budget := e.opts.MaxUnzippedBytes
	read := func(f *zip.File, read func(*xmlTokens) error) error {
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		return read(newXMLTokens(ctx, &budgetReader{rc: rc, left: &budget}))
	}
	d := &docxReader{styles: map[string]int{}, numFmt: map[string]string{}, out: out, max: e.opts.MaxTextBytes}
	if f := parts["word/styles.xml"]; f != nil {
		if err := read(f, d.readStyles); err != nil {
			return "", docxError(ctx, err)
		}
	}
	if f := parts["word/numbering.xml"]; f != nil {
		if err := read(f, d.readNumbering); err != nil {
			return "", docxError(ctx, err)
		}
	}
	var title string
	if f := parts["docProps/core.xml"]; f != nil {
		// The title is a nicety: a damaged core.xml does not fail the file.
		_ = read(f, func(x *xmlTokens) error {
			title = coreTitle(x)
			return nil
		})
	}
	if err := read(main, d.readDocument); err != nil {
		return "", docxError(ctx, err)
	}
	if title == "" {
		title = d.firstHeading
	}
	return title, nil
}

func tooManyParts(n, max int) error {
	return invalid("the .docx file has %d parts, more than the %d allowed; is it really a Word document?", n, max)
}

func docxError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errTooBig) {
		return invalid("the .docx file expands to more than its size limit; split it into smaller documents")
	}
	if errors.Is(err, errXMLToken) {
		return invalid("the .docx file has a single piece of XML (a run of text, a tag or a comment) over %s; save it again from Word, or split the text", size(maxXMLTokenBytes))
	}
	if errors.Is(err, errXMLDepth) {
		return invalid("the .docx file nests XML elements more than %d deep; save it again from Word and re-upload", maxXMLDepth)
	}
	if isValidation(err) {
		return err
	}
	return invalid("the .docx file is damaged (%s); save it again from Word and re-upload", shortErr(err))
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// budgetReader fails once the bytes read from all parts exceed the shared
// budget: the cap holds even if a declared size lied.
type budgetReader struct {
	rc   io.ReadCloser
	left *int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	*b.left -= int64(n)
	if *b.left < 0 {
		return n, errTooBig
	}
	return n, err
}

var (
	errXMLToken = errors.New("xml token over the cap")
	errXMLDepth = errors.New("xml nesting over the cap")
)

// xmlTokens reads the tokens of one XML part within maxXMLTokenBytes per
// token and maxXMLDepth of nesting, checking ctx now and then.
type xmlTokens struct {
	ctx   context.Context
	dec   *xml.Decoder
	limit *tokenLimit
	depth int
	// open holds the local names of the open elements: after a start
	// element, its own name is last.
	open []string
	n    int
}

func newXMLTokens(ctx context.Context, r io.Reader) *xmlTokens {
	limit := &tokenLimit{r: r, max: maxXMLTokenBytes}
	return &xmlTokens{ctx: ctx, dec: xml.NewDecoder(limit), limit: limit}
}

// next returns the next token, io.EOF at the end. Tokens are only valid
// until the next call.
func (x *xmlTokens) next() (xml.Token, error) {
	if x.n++; x.n%4096 == 0 && x.ctx.Err() != nil {
		return nil, x.ctx.Err()
	}
	x.limit.n = 0
	tok, err := x.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case xml.StartElement:
		if x.depth++; x.depth > maxXMLDepth {
			return nil, errXMLDepth
		}
		x.open = append(x.open, t.Name.Local)
	case xml.EndElement:
		x.depth--
		x.open = x.open[:len(x.open)-1]
	}
	return tok, nil
}

// within reports whether the open elements are exactly path (local names
// from the root).
func (x *xmlTokens) within(path ...string) bool {
	if len(x.open) != len(path) {
		return false
	}
	for i, name := range path {
		if name != "*" && x.open[i] != name {
			return false
		}
	}
	return true
}

// tokenLimit fails a read once more than max bytes were read since n was
// last reset, which xmlTokens does before each token: encoding/xml reads
// ahead by one buffer at most, so a token over the cap trips it.
type tokenLimit struct {
	r      io.Reader
	n, max int
}

func (l *tokenLimit) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, errXMLToken
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}

// docxReader turns WordprocessingML into Markdown.
type docxReader struct {
	styles map[string]int    // paragraph style id -> heading level
	numFmt map[string]string // "numId/ilvl" -> numFmt ("bullet", "decimal", ...)

	out *textSink
	// held is the text read but not yet written to out (open paragraphs,
	// table cells), counted against max with what out holds.
	held, max    int
	firstHeading string
}

// hold counts n more bytes of text held back, and fails when they and
// the text written make more than the cap.
func (d *docxReader) hold(n int) error {
	d.held += n
	if d.held+d.out.Len() > d.max {
		return overCap(d.max)
	}
	return nil
}

// readStyles maps paragraph styles to heading levels: "heading N" (by name,
// so localized style ids work) or an outline level, and "Title" as 1.
func (d *docxReader) readStyles(x *xmlTokens) error {
	type style struct {
		typ, id, name, basedOn, outline string
	}
	var cur *style
	based := map[string]string{}
	for seen := 0; seen < maxDocxStyles; {
		tok, err := x.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("styles: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case x.within("*", "style"):
				cur = &style{typ: attrValue(t, "type"), id: attrValue(t, "styleId")}
			case cur == nil:
			case x.within("*", "style", "name"):
				cur.name = attrValue(t, "val")
			case x.within("*", "style", "basedOn"):
				cur.basedOn = attrValue(t, "val")
			case x.within("*", "style", "pPr", "outlineLvl"):
				cur.outline = attrValue(t, "val")
			}
		case xml.EndElement:
			if t.Name.Local != "style" || cur == nil || x.depth != 1 {
				continue
			}
			s := cur
			cur = nil
			seen++
			if s.typ != "" && s.typ != "paragraph" {
				continue
			}
			if lv := headingLevel(s.id, s.name, s.outline); lv > 0 {
				d.styles[s.id] = lv
			}
			based[s.id] = s.basedOn
		}
	}
	// A style based on a heading style is a heading too.
	for id := range based {
		if _, ok := d.styles[id]; ok {
			continue
		}
		for p, hops := based[id], 0; p != "" && hops < 10; p, hops = based[p], hops+1 {
			if lv, ok := d.styles[p]; ok {
				d.styles[id] = lv
				break
			}
		}
	}
	return nil
}

// attrValue is the value of the attribute of that local name, in any
// namespace, as encoding/xml's ",attr" fields match.
func attrValue(t xml.StartElement, local string) string {
	for _, a := range t.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func headingLevel(id, name, outline string) int {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "title" || strings.EqualFold(id, "Title"):
		return 1
	case strings.HasPrefix(n, "heading "):
		if lv, err := strconv.Atoi(strings.TrimPrefix(n, "heading ")); err == nil && lv >= 1 && lv <= 9 {
			return min(lv, 6)
		}
	case strings.HasPrefix(strings.ToLower(id), "heading"):
		if lv, err := strconv.Atoi(id[len("heading"):]); err == nil && lv >= 1 && lv <= 9 {
			return min(lv, 6)
		}
	}
	if lv, err := strconv.Atoi(outline); err == nil && lv >= 0 && lv < 9 {
		return min(lv+1, 6)
	}
	return 0
}

// readNumbering records each list's number format per level, to tell
// bullets from numbered lists.
func (d *docxReader) readNumbering(x *xmlTokens) error {
	type lvl struct{ ilvl, numFmt string }
	abstract := map[string][]lvl{}
	type num struct{ id, abstract string }
	var nums []num
	var abstractID, numID, ilvl string
	levels := 0
	for levels < maxDocxStyles && len(nums) < maxDocxStyles {
		tok, err := x.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("numbering: %w", err)
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch {
		case x.depth == 2:
			abstractID, numID = "", ""
			switch t.Name.Local {
			case "abstractNum":
				abstractID = attrValue(t, "abstractNumId")
			case "num":
				numID = attrValue(t, "numId")
			}
		case x.within("*", "abstractNum", "lvl"):
			ilvl = attrValue(t, "ilvl")
		case x.within("*", "abstractNum", "lvl", "numFmt"):
			abstract[abstractID] = append(abstract[abstractID], lvl{ilvl, attrValue(t, "val")})
			levels++
		case x.within("*", "num", "abstractNumId"):
			nums = append(nums, num{numID, attrValue(t, "val")})
		}
	}
	for _, n := range nums {
		for _, l := range abstract[n.abstract] {
			if len(d.numFmt) >= maxDocxStyles {
				return nil
			}
			d.numFmt[n.id+"/"+l.ilvl] = l.numFmt
		}
	}
	return nil
}

// coreTitle is the title of the document's core properties (dc:title), or
// "" when there is none or the part is damaged.
func coreTitle(x *xmlTokens) string {
	var title strings.Builder
	in := false
	for {
		tok, err := x.next()
		if err != nil {
			if err != io.EOF {
				return ""
			}
			return title.String()
		}
		switch t := tok.(type) {
		case xml.StartElement:
			in = x.within("*", "title")
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in && title.Len() < 4*maxTitleBytes {
				title.Write(t)
			}
		}
	}
}

// paragraph is the state of a <w:p> being read.
type paragraph struct {
	text    strings.Builder
	style   string
	outline string // a direct outline level
	numID   string
	ilvl    string
}

// docxTable is the state of a top-level <w:tbl>; nested tables are flattened
// into the enclosing cell's text.
type docxTable struct {
	rows [][]string
	row  []string
	cell strings.Builder
	held int // bytes of text it holds, with a few per cell for its Markdown
}

// cellBytes is what a cell is counted for beyond its text: its separator in
// the Markdown written (" |", a space), about the memory it takes.
const cellBytes = 4

// readDocument streams word/document.xml, so a large body never sits in
// memory as a tree, and writes the text as paragraphs and tables end.
func (d *docxReader) readDocument(x *xmlTokens) error {
	var (
		stack []string // local names of the open WordprocessingML elements
		paras []*paragraph
		tbl   *docxTable
		depth int // table nesting
		skip  int // inside mc:Fallback, whose content duplicates mc:Choice
	)
	parent := func() string {
		if len(stack) < 2 {
			return ""
		}
		return stack[len(stack)-2]
	}
	write := func(s []byte) error {
		if len(paras) == 0 {
			return nil
		}
		paras[len(paras)-1].text.Write(s)
		return d.hold(len(s))
	}
	for {
		tok, err := x.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "Fallback" && t.Name.Space != nsW {
				skip++
			}
			if skip > 0 || t.Name.Space != nsW {
				stack = append(stack, "")
				continue
			}
			stack = append(stack, t.Name.Local)
			switch t.Name.Local {
			case "p":
				paras = append(paras, &paragraph{})
			case "pStyle":
				if len(paras) > 0 && parent() == "pPr" {
					paras[len(paras)-1].style = wAttr(t, "val")
				}
			case "outlineLvl":
				if len(paras) > 0 && parent() == "pPr" {
					paras[len(paras)-1].outline = wAttr(t, "val")
				}
			case "numId":
				if len(paras) > 0 {
					paras[len(paras)-1].numID = wAttr(t, "val")
				}
			case "ilvl":
				if len(paras) > 0 {
					paras[len(paras)-1].ilvl = wAttr(t, "val")
				}
			case "tab":
				if parent() == "r" {
					err = write([]byte{'\t'})
				}
			case "br", "cr":
				if parent() == "r" {
					err = write([]byte{'\n'})
				}
			case "noBreakHyphen":
				err = write([]byte{'-'})
			case "tbl":
				depth++
				if depth == 1 {
					tbl = &docxTable{}
				}
			}
		case xml.EndElement:
			local := ""
			if n := len(stack); n > 0 {
				local = stack[n-1]
				stack = stack[:n-1]
			}
			if t.Name.Local == "Fallback" && t.Name.Space != nsW {
				skip--
			}
			switch local {
			case "p":
				p := paras[len(paras)-1]
				paras = paras[:len(paras)-1]
				d.held -= p.text.Len()
				if tbl != nil {
					if s := strings.TrimSpace(p.text.String()); s != "" {
						if tbl.cell.Len() > 0 {
							tbl.cell.WriteByte(' ')
						}
						tbl.cell.WriteString(s)
						tbl.held += len(s) + 1
						err = d.hold(len(s) + 1)
					}
				} else {
					err = d.paragraph(p)
				}
			case "tc":
				if depth == 1 && tbl != nil {
					tbl.row = append(tbl.row, tbl.cell.String())
					tbl.cell.Reset()
					tbl.held += cellBytes
					err = d.hold(cellBytes)
				}
			case "tr":
				if depth == 1 && tbl != nil {
					tbl.rows = append(tbl.rows, tbl.row)
					tbl.row = nil
				}
			case "tbl":
				depth--
				if depth == 0 && tbl != nil {
					d.held -= tbl.held
					err = d.table(tbl.rows)
					tbl = nil
				}
			}
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "t" && skip == 0 {
				err = write(t)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func wAttr(t xml.StartElement, local string) string {
	for _, a := range t.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// paragraph writes one body paragraph as a heading, a list item or text.
func (d *docxReader) paragraph(p *paragraph) error {
	text := strings.TrimSpace(p.text.String())
	if text == "" {
		return nil
	}
	level := d.styles[p.style]
	if level == 0 {
		level = headingLevel(p.style, "", p.outline)
	}
	switch {
	case level > 0:
		text = oneLine(text)
		if d.firstHeading == "" {
			d.firstHeading = cleanTitle(text)
		}
		return d.write("\n\n", strings.Repeat("#", level), " ", text, "\n\n")
	case p.numID != "" && p.numID != "0":
		ilvl, _ := strconv.Atoi(p.ilvl)
		marker := "-"
		if f := d.numFmt[p.numID+"/"+strconv.Itoa(ilvl)]; f != "" && f != "bullet" && f != "none" {
			marker = "1."
		}
		return d.write(strings.Repeat("  ", min(max(ilvl, 0), 8)), marker, " ", strings.ReplaceAll(text, "\n", " "), "\n")
	default:
		return d.write("\n", text, "\n\n")
	}
}

func (d *docxReader) write(parts ...string) error {
	for _, s := range parts {
		if err := d.out.WriteString(s); err != nil {
			return err
		}
	}
	return nil
}

// table writes rows as a Markdown table, the first row as its header.
func (d *docxReader) table(rows [][]string) error {
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return nil
	}
	if err := d.write("\n\n"); err != nil {
		return err
	}
	for i, r := range rows {
		if err := d.write("|"); err != nil {
			return err
		}
		for c := range cols {
			cell := ""
			if c < len(r) {
				cell = strings.ReplaceAll(oneLine(r[c]), "|", `\|`)
			}
			if err := d.write(" ", cell, " |"); err != nil {
				return err
			}
		}
		if err := d.write("\n"); err != nil {
			return err
		}
		if i == 0 {
			if err := d.write("|"); err != nil {
				return err
			}
			for range cols {
				if err := d.write(" --- |"); err != nil {
					return err
				}
			}
			if err := d.write("\n"); err != nil {
				return err
			}
		}
	}
	return d.write("\n")
}
