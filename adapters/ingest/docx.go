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

	"github.com/conciergehq/concierge/core/domain"
)

// The WordprocessingML namespace; elements of others (drawing, markup
// compatibility, math) are walked through but never read as text.
const nsW = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

// errTooBig says a zip part outgrew the remaining uncompressed budget.
var errTooBig = errors.New("over the size cap")

func (e *Extractor) docx(ctx context.Context, body []byte) (domain.Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return domain.Document{}, invalid("the .docx file is not a Word document (it is not a zip archive); save it again as .docx and re-upload")
	}
	if len(zr.File) > e.opts.MaxZipEntries {
		return domain.Document{}, invalid("the .docx file has %d parts, more than the %d allowed; is it really a Word document?", len(zr.File), e.opts.MaxZipEntries)
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
		return domain.Document{}, invalid("the .docx file expands to more than %s; split it into smaller documents", size(e.opts.MaxUnzippedBytes))
	}
	main := parts["word/document.xml"]
	if main == nil {
		return domain.Document{}, invalid("the .docx file has no document body (word/document.xml); save it again from Word and re-upload")
	}
	budget := e.opts.MaxUnzippedBytes
	open := func(f *zip.File) (io.ReadCloser, error) {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		return &budgetReader{rc: rc, left: &budget}, nil
	}
	d := &docxReader{styles: map[string]int{}, numFmt: map[string]string{}}
	if f := parts["word/styles.xml"]; f != nil {
		if err := withPart(f, open, d.readStyles); err != nil {
			return domain.Document{}, docxError(err)
		}
	}
	if f := parts["word/numbering.xml"]; f != nil {
		if err := withPart(f, open, d.readNumbering); err != nil {
			return domain.Document{}, docxError(err)
		}
	}
	var title string
	if f := parts["docProps/core.xml"]; f != nil {
		_ = withPart(f, open, func(r io.Reader) error {
			title = coreTitle(r)
			return nil
		})
	}
	if err := withPart(main, open, func(r io.Reader) error { return d.readDocument(ctx, r) }); err != nil {
		if ctx.Err() != nil {
			return domain.Document{}, ctx.Err()
		}
		return domain.Document{}, docxError(err)
	}
	if title == "" {
		title = d.firstHeading
	}
	return domain.Document{Title: title, Text: d.out.String()}, nil
}

func docxError(err error) error {
	if errors.Is(err, errTooBig) {
		return invalid("the .docx file expands to more than its size limit; split it into smaller documents")
	}
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
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

func withPart(f *zip.File, open func(*zip.File) (io.ReadCloser, error), read func(io.Reader) error) error {
	rc, err := open(f)
	if err != nil {
		return err
	}
	defer rc.Close()
	return read(rc)
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

func (b *budgetReader) Close() error { return b.rc.Close() }

// docxReader turns WordprocessingML into Markdown.
type docxReader struct {
	styles map[string]int    // paragraph style id -> heading level
	numFmt map[string]string // "numId/ilvl" -> numFmt ("bullet", "decimal", ...)

	out          strings.Builder
	firstHeading string
}

// readStyles maps paragraph styles to heading levels: "heading N" (by name,
// so localized style ids work) or an outline level, and "Title" as 1.
func (d *docxReader) readStyles(r io.Reader) error {
	type style struct {
		Type       string `xml:"type,attr"`
		ID         string `xml:"styleId,attr"`
		Name       val    `xml:"name"`
		BasedOn    val    `xml:"basedOn"`
		OutlineLvl val    `xml:"pPr>outlineLvl"`
	}
	var doc struct {
		Styles []style `xml:"style"`
	}
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return fmt.Errorf("styles: %w", err)
	}
	based := map[string]string{}
	for _, s := range doc.Styles {
		if s.Type != "" && s.Type != "paragraph" {
			continue
		}
		if lv := headingLevel(s.ID, s.Name.Val, s.OutlineLvl.Val); lv > 0 {
			d.styles[s.ID] = lv
		}
		based[s.ID] = s.BasedOn.Val
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

type val struct {
	Val string `xml:"val,attr"`
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
func (d *docxReader) readNumbering(r io.Reader) error {
	type lvl struct {
		Ilvl   string `xml:"ilvl,attr"`
		NumFmt val    `xml:"numFmt"`
	}
	var doc struct {
		Abstract []struct {
			ID     string `xml:"abstractNumId,attr"`
			Levels []lvl  `xml:"lvl"`
		} `xml:"abstractNum"`
		Nums []struct {
			ID       string `xml:"numId,attr"`
			Abstract val    `xml:"abstractNumId"`
		} `xml:"num"`
	}
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return fmt.Errorf("numbering: %w", err)
	}
	abstract := map[string][]lvl{}
	for _, a := range doc.Abstract {
		abstract[a.ID] = a.Levels
	}
	for _, n := range doc.Nums {
		for _, l := range abstract[n.Abstract.Val] {
			d.numFmt[n.ID+"/"+l.Ilvl] = l.NumFmt.Val
		}
	}
	return nil
}

func coreTitle(r io.Reader) string {
	var core struct {
		Title string `xml:"title"`
	}
	if xml.NewDecoder(r).Decode(&core) != nil {
		return ""
	}
	return oneLine(core.Title)
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
}

// readDocument streams word/document.xml, so a large body never sits in
// memory as a tree.
func (d *docxReader) readDocument(ctx context.Context, r io.Reader) error {
	dec := xml.NewDecoder(r)
	var (
		stack  []string // local names of the open WordprocessingML elements
		paras  []*paragraph
		tbl    *docxTable
		depth  int // table nesting
		skip   int // inside mc:Fallback, whose content duplicates mc:Choice
		tokens int
	)
	parent := func() string {
		if len(stack) < 2 {
			return ""
		}
		return stack[len(stack)-2]
	}
	write := func(s string) {
		if len(paras) > 0 {
			paras[len(paras)-1].text.WriteString(s)
		}
	}
	for {
		tokens++
		if tokens%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		tok, err := dec.Token()
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
					write("\t")
				}
			case "br", "cr":
				if parent() == "r" {
					write("\n")
				}
			case "noBreakHyphen":
				write("-")
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
				if tbl != nil {
					if s := strings.TrimSpace(p.text.String()); s != "" {
						if tbl.cell.Len() > 0 {
							tbl.cell.WriteByte(' ')
						}
						tbl.cell.WriteString(s)
					}
				} else {
					d.paragraph(p)
				}
			case "tc":
				if depth == 1 && tbl != nil {
					tbl.row = append(tbl.row, tbl.cell.String())
					tbl.cell.Reset()
				}
			case "tr":
				if depth == 1 && tbl != nil {
					tbl.rows = append(tbl.rows, tbl.row)
					tbl.row = nil
				}
			case "tbl":
				depth--
				if depth == 0 && tbl != nil {
					d.table(tbl.rows)
					tbl = nil
				}
			}
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "t" && skip == 0 {
				write(string(t))
			}
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
func (d *docxReader) paragraph(p *paragraph) {
	text := strings.TrimSpace(p.text.String())
	if text == "" {
		return
	}
	level := d.styles[p.style]
	if level == 0 {
		level = headingLevel(p.style, "", p.outline)
	}
	switch {
	case level > 0:
		text = oneLine(text)
		if d.firstHeading == "" {
			d.firstHeading = text
		}
		d.out.WriteString("\n\n" + strings.Repeat("#", level) + " " + text + "\n\n")
	case p.numID != "" && p.numID != "0":
		ilvl, _ := strconv.Atoi(p.ilvl)
		marker := "-"
		if f := d.numFmt[p.numID+"/"+strconv.Itoa(ilvl)]; f != "" && f != "bullet" && f != "none" {
			marker = "1."
		}
		d.out.WriteString(strings.Repeat("  ", min(ilvl, 8)) + marker + " " + strings.ReplaceAll(text, "\n", " ") + "\n")
	default:
		d.out.WriteString("\n" + text + "\n\n")
	}
}

// table writes rows as a Markdown table, the first row as its header.
func (d *docxReader) table(rows [][]string) {
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return
	}
	d.out.WriteString("\n\n")
	for i, r := range rows {
		d.out.WriteString("|")
		for c := range cols {
			cell := ""
			if c < len(r) {
				cell = strings.ReplaceAll(oneLine(r[c]), "|", `\|`)
			}
			d.out.WriteString(" " + cell + " |")
		}
		d.out.WriteString("\n")
		if i == 0 {
			d.out.WriteString("|" + strings.Repeat(" --- |", cols) + "\n")
		}
	}
	d.out.WriteString("\n")
}
