package ingest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
)

// Fuzz targets, one per extractor: whatever the bytes, extraction returns
// a document whose text is valid UTF-8 without NULs and within the cap and
// whose title is one short line without control characters, or an error
// about the file (domain.ErrInvalidInput), and does not panic.
// Caps are small so that a run spends its time on many inputs.

const fuzzTextCap = 64 << 10

func fuzzExtract(t *testing.T, name string, data []byte) {
	e := NewExtractor(ExtractorOptions{
		PureGoPDF: true, MaxTextBytes: fuzzTextCap, MaxUnzippedBytes: 4 << 20,
		MaxPDFStreamBytes: 1 << 20, MaxPDFPages: 50, Timeout: 10 * time.Second,
	})
	doc, err := e.Extract(context.Background(), name, data)
	if err != nil {
		if !errors.Is(err, domain.ErrInvalidInput) {
			t.Fatalf("err = %v (%T), want a domain.ErrInvalidInput", err, err)
		}
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Fields["file"] == "" {
			t.Fatalf("err = %#v, want a message on field file", err)
		}
		return
	}
	for what, s := range map[string]string{"text": doc.Text, "title": doc.Title} {
		if s == "" {
			t.Errorf("%s is empty", what)
		}
		if !utf8.ValidString(s) {
			t.Errorf("%s is not valid UTF-8: %q", what, s)
		}
		if strings.ContainsRune(s, 0) {
			t.Errorf("%s has a NUL: %q", what, s)
		}
	}
	if len(doc.Text) > fuzzTextCap {
		t.Errorf("text is %d bytes, over the cap of %d", len(doc.Text), fuzzTextCap)
	}
	if len(doc.Title) > maxTitleBytes || strings.IndexFunc(doc.Title, unicode.IsControl) >= 0 {
		t.Errorf("title %q is not one short line without control characters", doc.Title)
	}
	if i := strings.IndexFunc(doc.Text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }); i >= 0 {
		t.Errorf("text has a control character at %d: %q", i, doc.Text[i:min(i+20, len(doc.Text))])
	}
}

func FuzzExtractDOCX(f *testing.F) {
	f.Add(readFixture(f, "sample.docx"))
	f.Add(docxBody(f, func(w io.Writer) {
		io.WriteString(w, `<w:tbl><w:tr><w:tc><w:p><w:r><w:t>a|b</w:t></w:r></w:p></w:tc></w:tr></w:tbl><w:p><w:pPr><w:numPr><w:ilvl w:val="-3"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>item</w:t></w:r></w:p>`)
	}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.docx", data) })
}

func FuzzExtractPDF(f *testing.F) {
	f.Add(readFixture(f, "sample.pdf"))
	f.Add(readFixture(f, "encrypted.pdf"))
	f.Add(onePagePDF([]byte("BT /F1 11 Tf 72 720 Td (caf\\351 \\000 ok) Tj ET BI /W 2 /H 1 ID \x00(\xff EI BT (after) Tj ET")))
	f.Add(bytes.Replace(readFixture(f, "sample.pdf"), []byte("/Title (Concierge Setup Guide)"), []byte("/Title (Setup\\001Guide\\000ABC)"), 1))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.pdf", data) })
}

func FuzzExtractHTML(f *testing.F) {
	f.Add(readFixture(f, "sample.html"))
	f.Add([]byte("<html><head><title>T\x00\x01</title></head><body><main><h1>A</h1><p>b &amp; \xff c</p><table><tr><td>1</td></tr></table></main></body></html>"))
	f.Add([]byte("<title>" + strings.Repeat("Refunds ", 100) + "</title><p>Paid in fourteen days.</p>"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.html", data) })
}

func FuzzExtractCSV(f *testing.F) {
	f.Add(readFixture(f, "sample.csv"))
	f.Add([]byte("a;b\n1;\"2\n3\"\n\xff,\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.csv", data) })
}

func FuzzExtractText(f *testing.F) {
	f.Add(readFixture(f, "sample.md"), true)
	f.Add(readFixture(f, "sample.txt"), false)
	f.Add([]byte("\xff\xfeh\x00i\x00"), false)
	f.Add([]byte("---\r\ntitle: \"T\"\r\n---\r\n# H\r\n\tbody \u2028 x"), true)
	f.Add([]byte("# Refunds\x1b[1m guide\n\n"+strings.Repeat("Refunds are paid within fourteen days. ", 10)), true)
	f.Fuzz(func(t *testing.T, data []byte, markdown bool) {
		name := "f.txt"
		if markdown {
			name = "f.md"
		}
		fuzzExtract(t, name, data)
	})
}
