//go:build ignore

// Command gen writes the binary test fixtures of package ingest: a small
// two-page PDF, a PDF with an encryption dictionary, and a DOCX with a title,
// headings, lists and a table. Run it from adapters/ingest:
//
//	go run testdata/gen/main.go
//
// The outputs are committed; the tests read them and never run this.
package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := "testdata"
	write(filepath.Join(dir, "sample.pdf"), samplePDF(false))
	write(filepath.Join(dir, "encrypted.pdf"), samplePDF(true))
	write(filepath.Join(dir, "sample.docx"), sampleDOCX())
}

func write(path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote", path, len(b), "bytes")
}

// samplePDF builds a PDF 1.4 by hand: a Helvetica title (24 pt), headings
// (16 pt) and body text (11 pt) on two pages, including words placed apart
// with Td and a TJ array whose kerning gap stands for a space, as real
// producers do. With encrypted, the trailer carries a Standard security
// handler whose user password is not empty.
func samplePDF(encrypted bool) []byte {
	page1 := strings.Join([]string{
		"BT /F1 24 Tf 72 720 Td (Concierge Setup Guide) Tj ET",
		"BT /F1 16 Tf 72 680 Td (Installation) Tj ET",
		"BT /F1 11 Tf 72 655 Td (Download the installer from the dashboard and run it.) Tj",
		"0 -14 Td (The service starts on port 8080 by default.) Tj ET",
		"BT /F1 11 Tf 72 620 Td (Words) Tj 40 0 Td (positioned) Tj 60 0 Td (apart.) Tj ET",
	}, "\n")
	page2 := strings.Join([]string{
		"BT /F1 16 Tf 72 720 Td (Troubleshooting) Tj ET",
		"BT /F1 11 Tf 72 695 Td [(If the widget does not load, check the) -250 (allowed origins \\(CORS\\).)] TJ ET",
	}, "\n")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		stream(page1),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 7 0 R >>",
		stream(page2),
		"<< /Title (Concierge Setup Guide) /Producer (ingest testdata gen) >>",
	}
	trailerExtra := ""
	if encrypted {
		objs = append(objs, "<< /Filter /Standard /V 1 /R 2 /Length 40 /P -4 "+
			"/O <"+strings.Repeat("4f", 32)+"> /U <"+strings.Repeat("55", 32)+"> >>")
		trailerExtra = fmt.Sprintf(" /Encrypt %d 0 R /ID [<%s> <%s>]", len(objs), strings.Repeat("ab", 16), strings.Repeat("ab", 16))
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info 8 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailerExtra, xref)
	return b.Bytes()
}

func stream(content string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)
}

const (
	wNS  = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	mcNS = `xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"`
)

// sampleDOCX builds a minimal WordprocessingML package: Title and heading
// styles (one heading style with a localized id, recognised by its name),
// a bullet list and a numbered list, a table, a run split in two, a tab and
// a line break, a tracked deletion and a markup-compatibility fallback that
// must not be read.
func sampleDOCX() []byte {
	p := func(style, text string) string {
		ppr := ""
		if style != "" {
			ppr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
		}
		return `<w:p>` + ppr + `<w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
	}
	li := func(numID, ilvl, text string) string {
		return `<w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="` + ilvl + `"/><w:numId w:val="` + numID + `"/></w:numPr></w:pPr><w:r><w:t>` + text + `</w:t></w:r></w:p>`
	}
	cell := func(text string) string { return `<w:tc><w:p><w:r><w:t>` + text + `</w:t></w:r></w:p></w:tc>` }
	row := func(cells ...string) string {
		var b strings.Builder
		b.WriteString("<w:tr>")
		for _, c := range cells {
			b.WriteString(cell(c))
		}
		b.WriteString("</w:tr>")
		return b.String()
	}
	body := strings.Join([]string{
		p("Title", "Concierge Handbook"),
		p("", "This handbook explains how the support assistant works."),
		p("Heading1", "Getting started"),
		`<w:p><w:r><w:t xml:space="preserve">Sign </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>in</w:t></w:r><w:r><w:t xml:space="preserve"> and open </w:t></w:r><w:r><w:tab/><w:t>Settings.</w:t><w:br/><w:t>Then pick a plan.</w:t></w:r>` +
			`<w:del w:id="1" w:author="x"><w:r><w:delText>deleted words</w:delText></w:r></w:del></w:p>`,
		li("1", "0", "Create a workspace"),
		li("1", "1", "Invite your team"),
		li("2", "0", "Upload documents"),
		li("2", "0", "Publish the widget"),
		p("Kop2", "Plans and prices"),
		`<w:tbl><w:tblPr/>` + row("Plan", "Price", "Agents") + row("Starter", "19 USD", "1") + row("Pro | Plus", "49 USD", "5") + `</w:tbl>`,
		p("Heading2", "Limits"),
		`<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:t>Uploads are capped at 50 MB.</w:t></mc:Choice><mc:Fallback><w:t>FALLBACK DUPLICATE</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>`,
	}, "\n")
	document := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document ` + wNS + ` ` + mcNS + `><w:body>` + body + `<w:sectPr/></w:body></w:document>`

	styles := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles ` + wNS + `>
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Kop2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/><w:basedOn w:val="Normal"/></w:style>
</w:styles>`

	numbering := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering ` + wNS + `>
<w:abstractNum w:abstractNumId="10"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="20"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="10"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="20"/></w:num>
</w:numbering>`

	core := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Concierge Handbook</dc:title></cp:coreProperties>`

	contentTypes := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
<Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>
<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
</Types>`

	rels := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>
</Relationships>`

	docRels := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>
<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/>
</Relationships>`

	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range []struct{ name, body string }{
		{"[Content_Types].xml", contentTypes},
		{"_rels/.rels", rels},
		{"word/_rels/document.xml.rels", docRels},
		{"word/document.xml", document},
		{"word/styles.xml", styles},
		{"word/numbering.xml", numbering},
		{"docProps/core.xml", core},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			log.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}
