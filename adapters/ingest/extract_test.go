package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExtractFormats(t *testing.T) {
	tests := []struct {
		file      string
		name      string // the upload's name, when not the fixture's
		title     string
		want      []string // substrings of the text, in order
		absent    []string
		pureGoPDF bool
	}{
		{
			file:  "sample.md",
			title: "KB guide",
			want: []string{
				"# Knowledge base guide", "## Supported files", "```sh\n# this line is code, not a heading",
				"### Sitemaps", "crawl exactly the pages it lists.",
			},
			absent: []string{"front matter", "title:"},
		},
		{
			file:  "sample.md",
			name:  "GUIDE.MARKDOWN",
			title: "KB guide",
			want:  []string{"## Crawling"},
		},
		{
			file:   "sample.txt",
			title:  "sample",
			want:   []string{"Opening hours\n\nOur support team", "Friday.\n\nUrgent issues\ncan be reported"},
			absent: []string{"\r", "   \n", "\n\n\n"},
		},
		{
			file:  "sample.html",
			title: "Widget Help Center",
			want: []string{
				"## Embedding the chat widget", "Add one script tag", "## Allowed origins",
				"## Plan limits", "| Plan | Messages per month | Widgets |", "| Pro | 20,000 | 5 |",
				"### Troubleshooting", "- Clear the browser cache and reload.",
			},
			absent: []string{"SCRIPT_NOISE_TOKEN", "secret-style-rule", "NAV_NOISE_TOKEN", "ASIDE_NOISE_TOKEN", "FOOTER_NOISE_TOKEN", "IMAGE_NOISE_TOKEN", "Acme Home"},
		},
		{
			file:  "sample.html",
			name:  "page.HTM",
			title: "Widget Help Center",
			want:  []string{"## Allowed origins"},
		},
		{
			file:      "sample.pdf",
			title:     "Concierge Setup Guide",
			pureGoPDF: true,
			want: []string{
				"# Concierge Setup Guide", "## Installation",
				"Download the installer from the dashboard and run it.\nThe service starts on port 8080 by default.",
				"Words positioned apart.", "## Troubleshooting",
				"If the widget does not load, check the allowed origins (CORS).",
			},
		},
		{
			file:  "sample.docx",
			title: "Concierge Handbook",
			want: []string{
				"# Concierge Handbook", "This handbook explains", "# Getting started",
				"Sign in and open \tSettings.\nThen pick a plan.",
				"- Create a workspace\n  - Invite your team", "1. Upload documents\n1. Publish the widget",
				"## Plans and prices", "| Plan | Price | Agents |\n| --- | --- | --- |\n| Starter | 19 USD | 1 |\n| Pro \\| Plus | 49 USD | 5 |",
				"## Limits", "Uploads are capped at 50 MB.",
			},
			absent: []string{"deleted words", "FALLBACK DUPLICATE"},
		},
		{
			file:  "sample.csv",
			title: "sample",
			want: []string{
				"question: How do I reset my password?\nanswer: Click \"Forgot password\" on the sign-in page, then follow the email.\ncategory: account",
				"question: Can I cancel any time?\nanswer: Yes, plans are monthly.\ncategory: billing",
				"question: Which browsers are supported?\nanswer: Chrome, Firefox, Safari and Edge",
			},
			absent: []string{"category: \n"},
		},
	}
	for _, tt := range tests {
		name := tt.name
		if name == "" {
			name = tt.file
		}
		t.Run(name, func(t *testing.T) {
			e := NewExtractor(ExtractorOptions{PureGoPDF: tt.pureGoPDF})
			doc, err := e.Extract(context.Background(), name, readFixture(t, tt.file))
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if doc.Title != tt.title {
				t.Errorf("Title = %q, want %q", doc.Title, tt.title)
			}
			if doc.URL != "" {
				t.Errorf("URL = %q, want none for a file", doc.URL)
			}
			rest := doc.Text
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("text lacks %q (or it is out of order); text:\n%s", w, doc.Text)
				}
				rest = rest[i+len(w):]
			}
			for _, a := range tt.absent {
				if strings.Contains(doc.Text, a) {
					t.Errorf("text contains %q; text:\n%s", a, doc.Text)
				}
			}
			if doc.Text != strings.TrimSpace(doc.Text) || strings.Contains(doc.Text, "\n\n\n") || strings.Contains(doc.Text, " \n") {
				t.Errorf("text is not tidy: %q", doc.Text)
			}
		})
	}
}

// zipOf builds a zip archive; entries are deflated, so runs of one byte
// shrink a thousandfold, as in a zip bomb.
func zipOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestExtractRefusesBadFiles(t *testing.T) {
	pdf := readFixture(t, "sample.pdf")
	bomb := zipOf(t, map[string][]byte{
		"word/document.xml": append([]byte(`<w:document xmlns:w="`+nsW+`"><w:body><w:p><w:r><w:t>`), bytes.Repeat([]byte(" "), 3<<20)...),
	})
	many := map[string][]byte{}
	for i := range 30 {
		many["word/media/"+strings.Repeat("x", i+1)+".png"] = []byte("x")
	}
	many["word/document.xml"] = []byte(`<w:document xmlns:w="` + nsW + `"><w:body><w:p><w:r><w:t>hi</w:t></w:r></w:p></w:body></w:document>`)
	manyEntries := zipOf(t, many)
	emptyDocx := zipOf(t, map[string][]byte{"word/document.xml": []byte(`<w:document xmlns:w="` + nsW + `"><w:body><w:p/></w:body></w:document>`)})
	brokenXML := zipOf(t, map[string][]byte{"word/document.xml": []byte(`<w:document xmlns:w="` + nsW + `"><w:body><w:p><w:r><w:t>unclosed`)})
	junk := []byte("PK\x03\x04 hello \x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11 junk \xff\xfe\x00")

	tests := []struct {
		name string
		file string
		body []byte
		opts ExtractorOptions
		want string // the whole message
	}{
		{"unsupported extension", "slides.pptx", []byte("x"), ExtractorOptions{},
			"file: .pptx files are not supported; use .md, .txt, .html, .pdf, .docx or .csv"},
		{"no extension", "README", []byte("x"), ExtractorOptions{},
			"file: the file name has no extension; use .md, .txt, .html, .pdf, .docx or .csv"},
		{"empty file", "notes.txt", nil, ExtractorOptions{}, "file: the file is empty"},
		{"blank file", "notes.md", []byte(" \n\r\n\t \n"), ExtractorOptions{}, "file: the file has no text"},
		{"over the size cap", "notes.txt", bytes.Repeat([]byte("a"), 3000), ExtractorOptions{MaxFileBytes: 2048},
			"file: the file is 2.9 KB; the limit is 2.0 KB"},
		{"text over its cap", "notes.txt", bytes.Repeat([]byte("word "), 600), ExtractorOptions{MaxTextBytes: 1024},
			"file: the file's text is over 1.0 KB; split it into smaller files"},
		{"binary junk in .txt", "notes.txt", junk, ExtractorOptions{},
			"file: the .txt file is not text (it looks like binary data); upload a plain-text file in UTF-8"},
		{"binary junk in .md", "notes.md", bytes.Repeat([]byte{0x01, 0x02, 'a'}, 100), ExtractorOptions{},
			"file: the .md file is not text (it looks like binary data); upload a plain-text file in UTF-8"},
		{"binary junk in .html", "page.html", junk, ExtractorOptions{},
			"file: the HTML is not text (it looks like binary data)"},
		{"html without text", "page.html", []byte("<html><head><title>T</title><script>x()</script></head><body><nav>Menu</nav></body></html>"), ExtractorOptions{},
			"file: the file has no text"},
		{"truncated pdf", "guide.pdf", pdf[:len(pdf)/2], ExtractorOptions{PureGoPDF: true},
			"file: the PDF is damaged or incomplete and cannot be read; export or download it again and re-upload"},
		{"pdf with a broken xref", "guide.pdf", bytes.Replace(pdf, []byte("xref\n0 9"), []byte("xref\n0 X"), 1), ExtractorOptions{PureGoPDF: true},
			"file: the PDF is damaged or incomplete and cannot be read; export or download it again and re-upload"},
		{"encrypted pdf", "locked.pdf", readFixture(t, "encrypted.pdf"), ExtractorOptions{PureGoPDF: true},
			"file: the PDF is password-protected or encrypted; remove the protection and upload it again"},
		{"not a pdf", "guide.pdf", []byte("just text pretending"), ExtractorOptions{PureGoPDF: true},
			"file: the file is not a PDF (it has no %PDF header); check the file or its extension"},
		{"pdf without text", "scan.pdf", bytes.ReplaceAll(bytes.ReplaceAll(pdf, []byte(") Tj"), []byte(")  ;")), []byte("] TJ"), []byte("]  ;")), ExtractorOptions{PureGoPDF: true},
			"file: the PDF has no selectable text (is it a scan?); run it through OCR or upload a text version"},
		{"docx that is not a zip", "report.docx", []byte("this is not a zip archive at all"), ExtractorOptions{},
			"file: the .docx file is not a Word document (it is not a zip archive); save it again as .docx and re-upload"},
		{"docx zip bomb", "bomb.docx", bomb, ExtractorOptions{MaxUnzippedBytes: 1 << 20},
			"file: the .docx file expands to more than 1.0 MB; split it into smaller documents"},
		{"docx with too many entries", "many.docx", manyEntries, ExtractorOptions{MaxZipEntries: 10},
			"file: the .docx file has 31 parts, more than the 10 allowed; is it really a Word document?"},
		{"docx without a body", "other.docx", zipOf(t, map[string][]byte{"hello.txt": []byte("hi")}), ExtractorOptions{},
			"file: the .docx file has no document body (word/document.xml); save it again from Word and re-upload"},
		{"docx with broken xml", "broken.docx", brokenXML, ExtractorOptions{},
			"file: the .docx file is damaged (XML syntax error on line 1: unexpected EOF); save it again from Word and re-upload"},
		{"docx without text", "empty.docx", emptyDocx, ExtractorOptions{}, "file: the file has no text"},
		{"csv over the row cap", "faq.csv", []byte("q,a\n1,2\n3,4\n5,6\n"), ExtractorOptions{MaxCSVRows: 2},
			"file: the .csv file has more than 2 rows; split it into smaller files"},
		{"csv of binary junk", "faq.csv", junk, ExtractorOptions{},
			"file: the .csv file is not text (it looks like binary data); upload a plain-text file in UTF-8"},
		{"timeout", "guide.pdf", pdf, ExtractorOptions{PureGoPDF: true, Timeout: time.Nanosecond},
			"file: reading the file took longer than 1ns; split it into smaller files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewExtractor(tt.opts).Extract(context.Background(), tt.file, tt.body)
			if !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidInput", err)
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Fields["file"] == "" {
				t.Fatalf("err = %#v, want a ValidationError on field file", err)
			}
			if err.Error() != tt.want {
				t.Errorf("message\n got %q\nwant %q", err.Error(), tt.want)
			}
		})
	}
}

func TestExtractCSVVariants(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"semicolons", "name;price\nPro;49\n", "name: Pro\nprice: 49"},
		{"tabs", "name\tprice\nPro\t49\n", "name: Pro\nprice: 49"},
		{"stray quote in a field", "item,size\nTV,55\" screen\n", "item: TV\nsize: 55\" screen"},
		{"ragged rows", "a,b\n1\n2,3,4\n", "a: 1\n\na: 2\nb: 3\ncolumn 3: 4"},
		{"markdown-looking headers", "# of seats,- note,1. step\n3,x,y\n", "\\# of seats: 3\n\\- note: x\n1\\. step: y"},
		{"header only", "name,price\n", "name, price"},
	}
	e := NewExtractor(ExtractorOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := e.Extract(context.Background(), "x.csv", []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Text != tt.want {
				t.Errorf("Text = %q, want %q", doc.Text, tt.want)
			}
		})
	}
}

func TestExtractDecodesLegacyText(t *testing.T) {
	utf16le := []byte{0xFF, 0xFE}
	for _, r := range "Café ☕ open" {
		utf16le = append(utf16le, byte(r), byte(r>>8))
	}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"utf-8 with bom", []byte("\xEF\xBB\xBFCafé open"), "Café open"},
		{"utf-16le with bom", utf16le, "Café ☕ open"},
		{"windows-1252", []byte("Caf\xe9 \x93open\x94"), "Café “open”"},
		{"crlf and cr", []byte("a\r\nb\rc"), "a\nb\nc"},
	}
	e := NewExtractor(ExtractorOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := e.Extract(context.Background(), "x.txt", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Text != tt.want {
				t.Errorf("Text = %q, want %q", doc.Text, tt.want)
			}
		})
	}
}

func TestExtractHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := NewExtractor(ExtractorOptions{PureGoPDF: true})
	for _, name := range []string{"sample.pdf", "sample.docx", "sample.md"} {
		_, err := e.Extract(ctx, name, readFixture(t, name))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
		if errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%s: a cancelled upload is not the file's fault: %v", name, err)
		}
	}
}

func TestHTMLDocument(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		url    string
		title  string
		want   []string
		absent []string
	}{
		{
			name:  "article",
			body:  string(readFixture(t, "sample.html")),
			url:   "https://help.example.test/docs/widget",
			title: "Widget Help Center",
			want:  []string{"## Allowed origins", "| Starter | 1,000 | 1 |"},
		},
		{
			name: "short page without an article falls back to main",
			body: `<html><body><nav>Menu Home</nav><main><h1>Refunds</h1><p>We refund within <a href="/policy">14 days</a>.</p></main><footer>Footer</footer></body></html>`,
			url:  "https://shop.example.test/help/refunds",
			// No <title>: the first h1 names the page.
			title:  "Refunds",
			want:   []string{"# Refunds", "We refund within [14 days](https://shop.example.test/policy)."},
			absent: []string{"Menu Home", "Footer"},
		},
		{
			name:  "no title and no heading",
			body:  `<p>Just a sentence.</p>`,
			url:   "https://x.example.test/a",
			title: "https://x.example.test/a",
			want:  []string{"Just a sentence."},
		},
		{
			name:  "latin-1 page declared in meta",
			body:  "<html><head><meta charset=\"iso-8859-1\"><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e</p></body></html>",
			title: "Café",
			want:  []string{"Crème brûlée"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := HTMLDocument([]byte(tt.body), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if doc.URL != tt.url || doc.Title != tt.title {
				t.Errorf("URL, Title = %q, %q; want %q, %q", doc.URL, doc.Title, tt.url, tt.title)
			}
			for _, w := range tt.want {
				if !strings.Contains(doc.Text, w) {
					t.Errorf("text lacks %q; text:\n%s", w, doc.Text)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(doc.Text, a) {
					t.Errorf("text contains %q; text:\n%s", a, doc.Text)
				}
			}
		})
	}
	for body, want := range map[string]string{
		"<html><body><script>x()</script></body></html>": "url: the page has no text",
		"\x00\x01\x02\x03 binary \x04\x05\x06":           "url: the HTML is not text (it looks like binary data)",
	} {
		_, err := HTMLDocument([]byte(body), "https://x.example.test/")
		if !errors.Is(err, domain.ErrInvalidInput) || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

// TestPDFToText runs the poppler path when the binary is installed.
func TestPDFToText(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext (poppler-utils) is not installed; the pure-Go reader is tested instead")
	}
	e := NewExtractor(ExtractorOptions{})
	if !e.UsesPDFToText() {
		t.Fatal("pdftotext is on PATH but the extractor does not use it")
	}
	doc, err := e.Extract(context.Background(), "guide.pdf", readFixture(t, "sample.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Concierge Setup Guide", "Installation", "Download the installer", "Troubleshooting", "allowed origins"} {
		if !strings.Contains(doc.Text, w) {
			t.Errorf("text lacks %q; text:\n%s", w, doc.Text)
		}
	}
	if doc.Title != "Concierge Setup Guide" {
		t.Errorf("Title = %q", doc.Title)
	}
	pdf := readFixture(t, "sample.pdf")
	for name, body := range map[string][]byte{"truncated": pdf[:len(pdf)/3], "encrypted": readFixture(t, "encrypted.pdf")} {
		if _, err := e.Extract(context.Background(), "x.pdf", body); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want ErrInvalidInput", name, err)
		}
	}
}

func TestPDFToTextMissingFallsBack(t *testing.T) {
	e := NewExtractor(ExtractorOptions{PDFToText: filepath.Join(t.TempDir(), "no-such-pdftotext"), Logger: slog.New(slog.DiscardHandler)})
	if e.UsesPDFToText() {
		t.Fatal("a missing pdftotext binary is in use")
	}
	doc, err := e.Extract(context.Background(), "guide.pdf", readFixture(t, "sample.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Text, "## Installation") {
		t.Errorf("pure-Go fallback text:\n%s", doc.Text)
	}
}

// fakePDFToText writes a shell script standing in for pdftotext, so the
// exec path is tested on machines without poppler.
func fakePDFToText(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pdftotext")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPDFToTextExec(t *testing.T) {
	pdf := readFixture(t, "sample.pdf")
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		// within bounds the extraction's time (default 5 s): a process
		// that was not stopped would take longer.
		within  time.Duration
		want    string // text, or the error message when wantErr
		wantErr bool
	}{
		{
			name: "text and arguments",
			// Echo the arguments and check the input file is the upload.
			script: `echo "args: $1 $2 $3 $5"; head -c 5 "$4"; printf '\npage one\fpage two\n'`,
			want:   "args: -enc UTF-8 -q -\n%PDF-\npage one\npage two",
		},
		{
			name:    "damaged",
			script:  `echo "Syntax Error: Couldn't find trailer dictionary" >&2; exit 1`,
			want:    "file: " + msgPDFDamaged,
			wantErr: true,
		},
		{
			name:    "password",
			script:  `echo "Command Line Error: Incorrect password" >&2; exit 1`,
			want:    "file: " + msgPDFEncrypted,
			wantErr: true,
		},
		{
			name:    "permissions",
			script:  `exit 3`,
			want:    "file: " + msgPDFEncrypted,
			wantErr: true,
		},
		{
			name:    "no text layer",
			script:  `printf '\f\f\n'`,
			want:    "file: the PDF has no selectable text (is it a scan?); run it through OCR or upload a text version",
			wantErr: true,
		},
		{
			// Stopped once its text is over the cap, not read to the end
			// (there is none) or until the time cap.
			name:    "endless output",
			script:  `exec yes "Refunds are paid within fourteen days."`,
			timeout: 30 * time.Second,
			// Reading 16 MB through a pipe under -race on a loaded machine
			// took over 5 s; well under the 30 s time cap still shows the
			// size cap stopped it.
			within:  20 * time.Second,
			want:    "file: the file's text is over 16.0 MB; split it into smaller files",
			wantErr: true,
		},
		{
			name:    "too slow",
			script:  `exec sleep 10`,
			timeout: 300 * time.Millisecond,
			want:    "file: reading the file took longer than 300ms; split it into smaller files",
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewExtractor(ExtractorOptions{PDFToText: fakePDFToText(t, tt.script), Timeout: tt.timeout})
			if !e.UsesPDFToText() {
				t.Fatal("the fake pdftotext is not in use")
			}
			within := tt.within
			if within == 0 {
				within = 5 * time.Second
			}
			start := time.Now()
			doc, err := e.Extract(context.Background(), "guide.pdf", pdf)
			if time.Since(start) > within {
				t.Errorf("took %s: the process was not stopped", time.Since(start))
			}
			if tt.wantErr {
				if !errors.Is(err, domain.ErrInvalidInput) || err.Error() != tt.want {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Text != tt.want || doc.Title != "Concierge Setup Guide" {
				t.Errorf("Text, Title = %q, %q; want %q and the PDF's Info title", doc.Text, doc.Title, tt.want)
			}
		})
	}
}

func TestPDFToTextVanishedFallsBack(t *testing.T) {
	path := fakePDFToText(t, "exit 0")
	e := NewExtractor(ExtractorOptions{PDFToText: path, Logger: slog.New(slog.DiscardHandler)})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	doc, err := e.Extract(context.Background(), "guide.pdf", readFixture(t, "sample.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Text, "## Installation") {
		t.Errorf("pure-Go fallback text:\n%s", doc.Text)
	}
}

// TestPDFInlineImage: the data of an inline image is binary and skipped,
// not read as tokens (a "(" in it would open a string to the end of the
// stream and swallow the text after it).
func TestPDFInlineImage(t *testing.T) {
	content := "BT /F1 11 Tf 72 720 Td (Before the image.) Tj ET\n" +
		"q 10 0 0 10 72 600 cm BI /W 4 /H 1 /BPC 8 /CS /G ID \x00(\xff\x01 EI Q\n" +
		"BT /F1 11 Tf 72 500 Td (After the image.) Tj ET"
	doc, err := NewExtractor(ExtractorOptions{PureGoPDF: true}).Extract(context.Background(), "image.pdf", onePagePDF([]byte(content)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Before the image.\n\nAfter the image."; doc.Text != want {
		t.Errorf("text = %q, want %q", doc.Text, want)
	}
}
