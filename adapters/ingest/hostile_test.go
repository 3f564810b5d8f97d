package ingest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Hostile documents are built here, small files that expand to tens of MB
// when read; nothing big is committed.

// repeated writes s n times to w.
func repeated(w io.Writer, s string, n int) {
	chunk := strings.Repeat(s, max(1, 64<<10/len(s)))
	per := len(chunk) / len(s)
	for ; n >= per; n -= per {
		io.WriteString(w, chunk)
	}
	io.WriteString(w, strings.Repeat(s, n))
}

// docxOf builds a .docx whose parts are written by the given functions,
// deflated (fast: the point is the expansion, not the ratio).
func docxOf(t testing.TB, parts map[string]func(io.Writer)) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	for name, write := range parts {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		write(w)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// wordBody writes a document.xml: the WordprocessingML head, body, the end.
func wordBody(body func(io.Writer)) func(io.Writer) {
	return func(w io.Writer) {
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="`+nsW+`"><w:body>`)
		body(w)
		io.WriteString(w, `</w:body></w:document>`)
	}
}

func docxBody(t testing.TB, body func(io.Writer)) []byte {
	return docxOf(t, map[string]func(io.Writer){"word/document.xml": wordBody(body)})
}

// pdfObject is one indirect object; a stream's data is flate-compressed
// when flate is set.
type pdfObject struct {
	dict   string
	stream []byte
	flate  bool
}

// pdfOf builds a PDF 1.4 with a classic cross-reference table; objects are
// numbered from 1 in order, the Catalog first. xref, when set, replaces the
// table's subsection line ("0 N").
func pdfOf(objs []pdfObject, xref string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", i+1)
		if o.stream == nil {
			fmt.Fprintf(&b, "%s\nendobj\n", o.dict)
			continue
		}
		data, filter := o.stream, ""
		if o.flate {
			var z bytes.Buffer
			zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
			zw.Write(data)
			zw.Close()
			data, filter = z.Bytes(), " /Filter /FlateDecode"
		}
		fmt.Fprintf(&b, "<< /Length %d%s %s >>\nstream\n", len(data), filter, o.dict)
		b.Write(data)
		b.WriteString("\nendstream\nendobj\n")
	}
	start := b.Len()
	if xref == "" {
		xref = fmt.Sprintf("0 %d", len(objs)+1)
	}
	fmt.Fprintf(&b, "xref\n%s\n0000000000 65535 f \n", xref)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, start)
	return b.Bytes()
}

// onePagePDF is a one-page PDF with a Helvetica font F1 and the given
// content stream (flate-compressed).
func onePagePDF(content []byte) []byte {
	return pagePDF("/Kids [3 0 R] /Count 1", "", content)
}

// pagePDF is onePagePDF with the page tree node's kids and count, and more
// entries in the page's dictionary.
func pagePDF(kids, pageExtra string, content []byte) []byte {
	return pdfOf([]pdfObject{
		{dict: "<< /Type /Catalog /Pages 2 0 R >>"},
		{dict: "<< /Type /Pages " + kids + " >>"},
		{dict: "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R " + pageExtra + ">>"},
		{stream: content, flate: true},
		{dict: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"},
	}, "")
}

// textOps is a content stream showing n lines of text.
func textOps(n int) []byte {
	var b bytes.Buffer
	b.WriteString("BT /F1 11 Tf 72 720 Td 14 TL\n")
	repeated(&b, "(Refunds are paid within fourteen days of the request.) ' ", n)
	b.WriteString("\nET")
	return b.Bytes()
}

// peakHeap runs f and returns how far the Go heap grew above where it
// started while f ran, sampled every half millisecond: the heap's objects,
// live or garbage not yet collected, which is what a process's resident
// memory follows. Large allocations stay in the figure until the next GC
// cycle, so a sample rarely misses them.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	tick := time.NewTicker(500 * time.Microsecond)
	defer tick.Stop()
	var peak uint64
	for {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > base {
			peak = max(peak, v-base)
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}

// hostileHeapBound is the most an extraction of any of the hostile
// documents may add to the heap: a few copies of the 1 MiB text cap the
// tests use, the per-token caps (a 2 MiB XML token, a 256 KiB CSV row) and
// the garbage the collector has not reclaimed yet. The documents expand to
// 10 to 1,000 times that when read whole.
const hostileHeapBound = 40 << 20

func TestExtractHostileDocuments(t *testing.T) {
	const textCap = 1 << 20
	// The extraction time bound only stops a document that never ends. These
	// documents must each meet their own limit first, which takes seconds,
	// but the suite runs this test with -race beside others on two cores (a
	// 20 s bound was hit there by the 18 MB text run), so the bounds are
	// generous: a document that loops still ends in the bound's message.
	hostileOpts := ExtractorOptions{PureGoPDF: true, MaxTextBytes: textCap, Timeout: 2 * time.Minute}
	with := func(f func(*ExtractorOptions)) ExtractorOptions {
		o := hostileOpts
		f(&o)
		return o
	}
	overText := "file: the file's text is over 1.0 MB; split it into smaller files"
	paragraph := `<w:p><w:r><w:t>Refunds are paid within fourteen days.</w:t></w:r></w:p>`

	tests := []struct {
		name string
		file string
		body func(t testing.TB) []byte
		opts ExtractorOptions
		want string // the error message; "" when the file is read
		text string // with want "", a part of the text
	}{
		// DOCX: a few hundred kB that inflate to 30-60 MB of XML.
		{
			name: "docx: one paragraph of a million runs", file: "runs.docx", opts: hostileOpts, want: overText,
			body: func(t testing.TB) []byte {
				return docxBody(t, func(w io.Writer) {
					io.WriteString(w, "<w:p>")
					repeated(w, `<w:r><w:t xml:space="preserve">refund policy </w:t></w:r>`, 1_500_000)
					io.WriteString(w, "</w:p>")
				})
			},
		},
		{
			name: "docx: a million tiny paragraphs", file: "paragraphs.docx", opts: hostileOpts, want: overText,
			body: func(t testing.TB) []byte {
				return docxBody(t, func(w io.Writer) { repeated(w, `<w:p><w:r><w:t>refund policy</w:t></w:r></w:p>`, 1_200_000) })
			},
		},
		{
			// Over the text cap, encoding/xml hands over the first 2 MB of
			// the run before it reports the read error.
			name: "docx: one run of 30 MB", file: "run.docx",
			opts: with(func(o *ExtractorOptions) { o.MaxTextBytes = 4 << 20 }),
			want: "file: the .docx file has a single piece of XML (a run of text, a tag or a comment) over 2.0 MB; save it again from Word, or split the text",
			body: func(t testing.TB) []byte {
				return docxBody(t, func(w io.Writer) {
					io.WriteString(w, "<w:p><w:r><w:t>")
					repeated(w, "refund ", 30<<20/7)
					io.WriteString(w, "</w:t></w:r></w:p>")
				})
			},
		},
		{
			name: "docx: an attribute of 30 MB", file: "attribute.docx", opts: hostileOpts,
			want: "file: the .docx file has a single piece of XML (a run of text, a tag or a comment) over 2.0 MB; save it again from Word, or split the text",
			body: func(t testing.TB) []byte {
				return docxBody(t, func(w io.Writer) {
					io.WriteString(w, `<w:p><w:pPr><w:pStyle w:val="`)
					repeated(w, "A", 30<<20)
					io.WriteString(w, `"/></w:pPr><w:r><w:t>x</w:t></w:r></w:p>`)
				})
			},
		},
		{
			name: "docx: elements nested a million deep", file: "deep.docx", opts: hostileOpts,
			want: "file: the .docx file nests XML elements more than 256 deep; save it again from Word and re-upload",
			body: func(t testing.TB) []byte {
				return docxBody(t, func(w io.Writer) {
					repeated(w, "<w:sdt>", 1_000_000)
					repeated(w, "</w:sdt>", 1_000_000)
				})
			},
		},
		{
			name: "docx: a table of four million empty cells", file: "cells.docx", opts: hostileOpts, want: overText,
			body: func(t testing.TB) []byte {
				return docxBody(t, func(w io.Writer) {
					io.WriteString(w, "<w:tbl><w:tr>")
					repeated(w, "<w:tc/>", 4_000_000)
					io.WriteString(w, "</w:tr></w:tbl>")
				})
			},
		},
		{
			name: "docx: a million styles", file: "styles.docx", opts: hostileOpts, text: "Refunds are paid",
			body: func(t testing.TB) []byte {
				return docxOf(t, map[string]func(io.Writer){
					"word/styles.xml": func(w io.Writer) {
						io.WriteString(w, `<w:styles xmlns:w="`+nsW+`">`)
						for i := range 1_000_000 {
							fmt.Fprintf(w, `<w:style w:type="paragraph" w:styleId="S%d"><w:name w:val="heading %d"/><w:basedOn w:val="S%d"/></w:style>`, i, i%9+1, i+1)
						}
						io.WriteString(w, `</w:styles>`)
					},
					"word/document.xml": wordBody(func(w io.Writer) { io.WriteString(w, paragraph) }),
				})
			},
		},
		{
			name: "docx: 400,000 zip entries", file: "entries.docx", opts: hostileOpts,
			want: "file: the .docx file has 400001 parts, more than the 5000 allowed; is it really a Word document?",
			body: func(t testing.TB) []byte {
				var b bytes.Buffer
				zw := zip.NewWriter(&b)
				for i := range 400_000 {
					if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("m/%d", i), Method: zip.Store}); err != nil {
						t.Fatal(err)
					}
				}
				w, _ := zw.Create("word/document.xml")
				wordBody(func(w io.Writer) { io.WriteString(w, paragraph) })(w)
				zw.Close()
				return b.Bytes()
			},
		},

		// PDF, read by the pure-Go reader.
		{
			name: "pdf: a content stream inflating to 8 MB of text", file: "bomb.pdf", opts: hostileOpts, want: overText,
			body: func(testing.TB) []byte { return onePagePDF(textOps(8 << 20 / 60)) },
		},
		{
			name: "pdf: a content stream over the stream cap", file: "stream.pdf",
			opts: with(func(o *ExtractorOptions) { o.MaxPDFStreamBytes = 4 << 20 }),
			want: "file: the PDF has a stream that expands to more than 4.0 MB; export it again (print to PDF) or split it into smaller files",
			body: func(testing.TB) []byte {
				var b bytes.Buffer
				repeated(&b, "0 0 m 10 10 l S\n", 8<<20/16)
				return onePagePDF(b.Bytes())
			},
		},
		{
			name: "pdf: four million operands", file: "operands.pdf", opts: hostileOpts,
			want: "file: the PDF has an object or a page with more than 262144 values; export it again (print to PDF) or split it into smaller files",
			body: func(testing.TB) []byte {
				var b bytes.Buffer
				repeated(&b, "1 ", 4_000_000)
				return onePagePDF(b.Bytes())
			},
		},
		{
			name: "pdf: an array of two million numbers", file: "array.pdf", opts: hostileOpts,
			want: "file: the PDF has an object or a page with more than 262144 values; export it again (print to PDF) or split it into smaller files",
			body: func(testing.TB) []byte {
				return pagePDF("/Kids [3 0 R] /Count 1", "/Junk ["+strings.Repeat("0 ", 2_000_000)+"]", textOps(10))
			},
		},
		{
			name: "pdf: cross-reference entries numbered from 50 million", file: "xref.pdf", opts: hostileOpts,
			want: "file: the PDF has more than 1048576 objects; export it again (print to PDF) or split it into smaller files",
			body: func(testing.TB) []byte {
				pdf := onePagePDF(textOps(10))
				return bytes.Replace(pdf, []byte("xref\n0 6\n"), []byte("xref\n50000000 6\n"), 1)
			},
		},
		{
			name: "pdf: a cross-reference stream of 50 million objects", file: "xrefstm.pdf", opts: hostileOpts,
			want: "file: the PDF has more than 1048576 objects; export it again (print to PDF) or split it into smaller files",
			body: func(testing.TB) []byte {
				pdf := onePagePDF(textOps(10))
				cut := bytes.Index(pdf, []byte("xref\n"))
				var b bytes.Buffer
				b.Write(pdf[:cut])
				start := b.Len()
				entries := []byte{0, 0, 0, 0}
				fmt.Fprintf(&b, "6 0 obj\n<< /Type /XRef /Size 50000000 /W [1 2 1] /Index [0 1] /Root 1 0 R /Length %d >>\nstream\n%s\nendstream\nendobj\n", len(entries), entries)
				fmt.Fprintf(&b, "startxref\n%d\n%%%%EOF\n", start)
				return b.Bytes()
			},
		},
		{
			name: "pdf: a page tree of ten thousand pages", file: "pages.pdf",
			opts: with(func(o *ExtractorOptions) { o.MaxPDFPages = 1000; o.Timeout = time.Minute }),
			want: "file: the PDF has more than 1000 pages; split it into smaller files",
			body: func(testing.TB) []byte {
				return pagePDF("/Kids ["+strings.Repeat("3 0 R ", 10_000)+"] /Count 10000000", "", textOps(10))
			},
		},
		{
			name: "pdf: a page tree that contains itself", file: "loop.pdf",
			opts: with(func(o *ExtractorOptions) { o.Timeout = time.Minute }),
			want: "file: " + msgPDFDamaged,
			body: func(testing.TB) []byte { return pagePDF("/Kids [2 0 R 3 0 R] /Count 2", "", textOps(10)) },
		},
		{
			name: "pdf: a hex string left open at the end of a content stream", file: "hex.pdf",
			opts: with(func(o *ExtractorOptions) { o.Timeout = time.Minute }),
			want: "file: the PDF has no selectable text (is it a scan?); run it through OCR or upload a text version",
			body: func(testing.TB) []byte { return onePagePDF([]byte("BT /F1 11 Tf 72 720 Td <41")) },
		},

		// HTML.
		{
			name: "html: 300,000 flat elements", file: "flat.html", opts: hostileOpts,
			want: "file: the HTML has more than 50000 elements; split it into smaller pages",
			body: func(testing.TB) []byte { return []byte("<p>" + strings.Repeat("<span>a</span>", 300_000) + "</p>") },
		},
		{
			name: "html: one run of 18 MB of text", file: "text.html", opts: hostileOpts,
			want: "file: the HTML has more than 1.0 MB of text; split it into smaller pages",
			body: func(testing.TB) []byte {
				return []byte("<html><body><p>" + strings.Repeat("refund ", 18<<20/7) + "</p></body></html>")
			},
		},
		{
			name: "html: 12 MB of text in paragraphs", file: "paragraphs.html", opts: hostileOpts,
			want: "file: the HTML has more than 1.0 MB of text; split it into smaller pages",
			body: func(testing.TB) []byte {
				return []byte("<html><body>" + strings.Repeat("<p>"+strings.Repeat("refund ", 100)+"</p>\n", 12<<20/710) + "</body></html>")
			},
		},
		{
			name: "html: an attribute of 16 MB", file: "attribute.html", opts: hostileOpts,
			want: "file: the HTML has a tag or a run of text over 2.0 MB; split it into smaller pages",
			body: func(testing.TB) []byte {
				return []byte(`<html><body><div data-x="` + strings.Repeat("A", 16<<20) + `"><p>Refunds.</p></div></body></html>`)
			},
		},
		{
			// x/net/html refuses it itself, before and after the change.
			name: "html: elements nested 20,000 deep", file: "deep.html", opts: hostileOpts,
			want: "file: the HTML cannot be parsed: html: open stack of elements exceeds 512 nodes",
			body: func(testing.TB) []byte { return []byte(strings.Repeat("<div>", 20_000) + "text") },
		},

		// CSV and text.
		{
			name: "csv: a million columns", file: "columns.csv", opts: hostileOpts,
			want: "file: the .csv file has a row over 256.0 KB; check its quoting, or split long values",
			body: func(testing.TB) []byte {
				return []byte("question," + strings.Repeat("a,", 1_000_000) + "\nrefund,yes\n")
			},
		},
		{
			name: "csv: one quoted field of 10 MB", file: "field.csv", opts: hostileOpts,
			want: "file: the .csv file has a row over 256.0 KB; check its quoting, or split long values",
			body: func(testing.TB) []byte {
				return []byte("question,answer\nrefund,\"" + strings.Repeat("paid in fourteen days\n", 10<<20/22) + "\"\n")
			},
		},
		{
			name: "txt: 30 MB of text", file: "notes.txt", opts: hostileOpts, want: overText,
			body: func(testing.TB) []byte { return bytes.Repeat([]byte("refund policy\n"), 30<<20/14) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body(t)
			e := NewExtractor(tt.opts)
			var doc domain.Document
			var err error
			peak := peakHeap(func() { doc, err = e.Extract(context.Background(), tt.file, body) })
			t.Logf("%.0f KB file; heap grew by %.1f MiB at most", float64(len(body))/1024, float64(peak)/(1<<20))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Extract: %v", err)
				}
				if !strings.Contains(doc.Text, tt.text) {
					t.Errorf("text lacks %q: %.200q", tt.text, doc.Text)
				}
			} else {
				if !errors.Is(err, domain.ErrInvalidInput) {
					t.Fatalf("err = %v, want ErrInvalidInput", err)
				}
				if err.Error() != tt.want {
					t.Errorf("message\n got %q\nwant %q", err.Error(), tt.want)
				}
			}
			if peak > hostileHeapBound {
				t.Errorf("the heap grew by %.1f MiB, over the bound of %d MiB", float64(peak)/(1<<20), hostileHeapBound>>20)
			}
		})
	}
}
