package main

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// extractDoc is one file source of a round of BenchmarkHostileExtraction.
type extractDoc struct {
	tenant int // which of the two tenants uploads it
	name   string
	body   []byte
	// refusal is a part of the FAILED reason a hostile document must get;
	// "" for a benign one, which must become READY.
	refusal string
}

// extractRound is what one round measured.
type extractRound struct {
	idle, peak int64 // the worker's resident memory once started, and its peak
	took       time.Duration
}

// BenchmarkHostileExtraction measures the peak resident memory (VmHWM) of a
// real worker process (`concierge worker`, the test binary re-executed as
// helperCommand does) while it extracts four hostile documents at once,
// against the same worker's peak with four benign documents of the same
// formats and sizes, in alternating rounds (benign, hostile, ...), a fresh
// worker process for each round so that no round inherits the memory of
// the one before. The hostile documents are a .docx inflating to 190 MB of
// XML (the case), a PDF whose 37 kB content stream inflates to four
// million operands, an HTML file of 150,000 elements and a .csv file with a
// million columns; the benign ones are the evaluation corpus's
// documentation in the same formats, a few MB of text to chunk and embed.
// Two workspaces upload two files each, so four extractions run at once
// (two index slots per workspace). Target: the hostile rounds' median peak
// under 256 MiB.
func BenchmarkHostileExtraction(b *testing.B) {
	s := newStack(b, stackOptions{env: map[string]string{"CONCIERGE_LOG_LEVEL": "error"}})
	tenants := []tenant{s.newTenant(domain.PlanStandard), s.newTenant(domain.PlanStandard)}
	for _, tn := range tenants {
		s.createAgent(tn, "docs")
	}
	corpus := evalCorpus(b)
	hostile := hostileExtractDocs()

	rounds := max(5, benchRounds())
	var benign, bad []extractRound
	for r := range rounds {
		docs := benignExtractDocs(corpus, hostile, r)
		if r == 0 {
			// Go keeps the first 10 lines of a benchmark's log: one for the files.
			var sizes []string
			for i := range docs {
				sizes = append(sizes, fmt.Sprintf("%s %.0f/%.0f", docs[i].name, float64(len(hostile[i].body))/1e3, float64(len(docs[i].body))/1e3))
			}
			b.Logf("file sizes in kB, hostile/benign: %s", strings.Join(sizes, ", "))
		}
		good := runExtractRound(b, s, tenants, docs)
		worse := runExtractRound(b, s, tenants, hostile)
		b.Logf("round %d: benign peak %.0f MiB (idle %.0f MiB, %s) | hostile peak %.0f MiB (idle %.0f MiB, %s)", r+1,
			mib(good.peak), mib(good.idle), good.took.Round(100*time.Millisecond), mib(worse.peak), mib(worse.idle), worse.took.Round(100*time.Millisecond))
		benign, bad = append(benign, good), append(bad, worse)
	}
	median := func(rs []extractRound) int64 {
		peaks := make([]int64, len(rs))
		for i, r := range rs {
			peaks[i] = r.peak
		}
		slices.Sort(peaks)
		return peaks[len(peaks)/2]
	}
	mb, mh := median(benign), median(bad)
	b.Logf("median worker peak RSS: benign %.0f MiB, hostile %.0f MiB (%.2fx); target: hostile under 256 MiB", mib(mb), mib(mh), float64(mh)/float64(mb))
	b.ReportMetric(mib(mh), "hostile-peak-MiB")
	b.ReportMetric(mib(mb), "benign-peak-MiB")
	b.ReportMetric(float64(mh)/float64(mb), "hostile/benign")
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// runExtractRound starts a worker process, uploads docs at once, waits for
// every one to be READY or FAILED, checks the outcomes and reads the
// worker's peak resident memory before stopping it.
func runExtractRound(b *testing.B, s *stack, tenants []tenant, docs []extractDoc) extractRound {
	b.Helper()
	var out syncBuffer
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	env["CONCIERGE_LOG_LEVEL"] = "info" // for "worker started"
	cmd := helperCommand(context.Background(), env, "worker")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the worker: %v", err)
	}
	defer stopProcess(b, cmd.Process, cmd.Wait)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "worker started"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the worker did not start: %s", out.String())
		}
	}
	var round extractRound
	round.idle = procStatus(b, cmd.Process.Pid, "VmRSS")

	start := time.Now()
	ids := make([]string, len(docs))
	var wg sync.WaitGroup
	for i, d := range docs {
		wg.Go(func() {
			r := s.upload(tenants[d.tenant], "docs", map[string]string{"type": "file"}, d.name, d.body)
			if r.Status != 201 {
				b.Errorf("uploading %s: %d %s", d.name, r.Status, r.Body)
				return
			}
			ids[i] = r.JSON(b)["id"].(string)
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	for i, d := range docs {
		path := "/api/v2/agents/docs/sources/" + ids[i]
		var src map[string]any
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			src = s.do("GET", path, nil, tenants[d.tenant].auth()).JSON(b)
			if st := src["status"]; st == "READY" || st == "FAILED" {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s still %v after 5 minutes; worker output:\n%s", d.name, src["status"], out.String())
			}
		}
		reason, _ := src["statusReason"].(string)
		switch {
		case d.refusal == "" && src["status"] != "READY":
			b.Errorf("benign %s: %v (%s), want READY", d.name, src["status"], reason)
		case d.refusal != "" && (src["status"] != "FAILED" || !strings.Contains(reason, d.refusal)):
			b.Errorf("hostile %s: %v (%q), want FAILED with %q", d.name, src["status"], reason, d.refusal)
		}
		s.do("DELETE", path, nil, tenants[d.tenant].auth())
	}
	round.took = time.Since(start)
	round.peak = procStatus(b, cmd.Process.Pid, "VmHWM")
	return round
}

// stopProcess asks a process to shut down and waits for it, killing it
// after 15 s.
func stopProcess(b *testing.B, p *os.Process, wait func() error) {
	_ = p.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.Kill()
		<-done
		b.Error("the worker did not stop within 15 s of SIGTERM")
	}
}

// procStatus reads a memory figure (VmRSS, VmHWM) of a process, in bytes.
func procStatus(b *testing.B, pid int, field string) int64 {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Skipf("no /proc status: %v", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Skipf("no %s in /proc/%d/status", field, pid)
	return 0
}

const benchWordNS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

// hostileExtractDocs are four small files that expand to hundreds of MB of
// memory when read whole.
func hostileExtractDocs() []extractDoc {
	var xml bytes.Buffer
	xml.WriteString(`<w:document xmlns:w="` + benchWordNS + `"><w:body>`)
	para := `<w:p><w:r><w:t>Refunds are paid within fourteen days of the request.</w:t></w:r></w:p>`
	xml.WriteString(strings.Repeat(para, 190<<20/len(para)))
	xml.WriteString(`</w:body></w:document>`)
	docx := benchDOCX(map[string][]byte{"word/document.xml": xml.Bytes()})

	pdf := benchPDF([][]byte{bytes.Repeat([]byte("1 "), 4_000_000)})
	html := "<html><body><p>" + strings.Repeat("<span>a</span>", 150_000) + "</p></body></html>"
	csv := "question," + strings.Repeat("a,", 1_000_000) + "\nrefunds,yes\n"
	return []extractDoc{
		{tenant: 0, name: "handbook.docx", body: docx, refusal: "the file's text is over 16.0 MB"},
		{tenant: 0, name: "guide.pdf", body: pdf, refusal: "more than 262144 values"},
		{tenant: 1, name: "page.html", body: []byte(html), refusal: "more than 50000 elements"},
		{tenant: 1, name: "faq.csv", body: []byte(csv), refusal: "a row over 256.0 KB"},
	}
}

// benignExtractDocs are the corpus's documentation in the formats of the
// hostile documents, each at least as large as its hostile counterpart.
// The round number is in every paragraph, so no round reuses the vectors
// of another.
func benignExtractDocs(corpus []string, hostile []extractDoc, round int) []extractDoc {
	var paras []string
	for _, page := range corpus {
		for p := range strings.SplitSeq(page, "\n\n") {
			if p = strings.TrimSpace(p); p != "" {
				paras = append(paras, p)
			}
		}
	}
	// grow calls add with the paragraphs, again and again with a copy
	// marker, until done says the file is big enough.
	grow := func(add func(p string), done func() bool) {
		for copyN := 0; !done(); copyN++ {
			for i, p := range paras {
				add(fmt.Sprintf("%s (round %d, copy %d.%d)", p, round, copyN, i))
				if i%64 == 0 && done() {
					return
				}
			}
		}
	}
	out := make([]extractDoc, len(hostile))
	for i, h := range hostile {
		out[i] = extractDoc{tenant: h.tenant, name: h.name}
		target := len(h.body)
		switch filepath.Ext(h.name) {
		case ".docx":
			var xml bytes.Buffer
			xml.WriteString(`<w:document xmlns:w="` + benchWordNS + `"><w:body>`)
			grow(func(p string) {
				style := ""
				if heading, ok := strings.CutPrefix(p, "# "); ok {
					style, p = `<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>`, heading
				}
				fmt.Fprintf(&xml, `<w:p>%s<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, style, xmlEscape(p))
			}, func() bool {
				// Deflate takes this XML to about a fifth: measure from there.
				if xml.Len() < 4*target {
					return false
				}
				out[i].body = benchDOCX(map[string][]byte{"word/document.xml": append(bytes.Clone(xml.Bytes()), `</w:body></w:document>`...)})
				return len(out[i].body) >= target
			})
		case ".pdf":
			var pages [][]byte
			var page bytes.Buffer
			lines := 0
			grow(func(p string) {
				if lines == 0 {
					page.WriteString("BT /F1 11 Tf 72 740 Td 14 TL\n")
				}
				for _, line := range wrap(p, 90) {
					fmt.Fprintf(&page, "(%s) '\n", pdfEscape(line))
					lines++
				}
				if lines >= 48 {
					page.WriteString("ET")
					pages = append(pages, bytes.Clone(page.Bytes()))
					page.Reset()
					lines = 0
				}
			}, func() bool {
				out[i].body = benchPDF(pages)
				return len(out[i].body) >= target
			})
		case ".html":
			var html strings.Builder
			html.WriteString("<html><head><title>Help center</title></head><body><main>")
			grow(func(p string) {
				if heading, ok := strings.CutPrefix(p, "# "); ok {
					fmt.Fprintf(&html, "<h2>%s</h2>\n", htmlEscape(heading))
					return
				}
				fmt.Fprintf(&html, "<p>%s</p>\n", htmlEscape(p))
			}, func() bool { return html.Len() >= target })
			html.WriteString("</main></body></html>")
			out[i].body = []byte(html.String())
		case ".csv":
			var csv strings.Builder
			csv.WriteString("question,answer,category\n")
			grow(func(p string) {
				fmt.Fprintf(&csv, "%q,%q,docs\n", firstSentence(p), p)
			}, func() bool { return csv.Len() >= target })
			out[i].body = []byte(csv.String())
		}
	}
	return out
}

func benchDOCX(parts map[string][]byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range parts {
		w, _ := zw.Create(name)
		w.Write(body)
	}
	zw.Close()
	return b.Bytes()
}

// benchPDF builds a PDF with one page per content stream (flate), the font
// F1 Helvetica.
func benchPDF(contents [][]byte) []byte {
	n := len(contents)
	// Objects: 1 catalog, 2 pages, 3 font, then a page and its content per page.
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"}
	var kids strings.Builder
	for i, c := range contents {
		page, content := 4+2*i, 5+2*i
		fmt.Fprintf(&kids, "%d 0 R ", page)
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		zw.Write(c)
		zw.Close()
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", content),
			fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.Bytes()))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n)
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
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
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func wrap(s string, width int) []string {
	var lines []string
	var line strings.Builder
	for _, w := range strings.Fields(s) {
		if line.Len() > 0 && line.Len()+1+len(w) > width {
			lines = append(lines, line.String())
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(w)
	}
	if line.Len() > 0 {
		lines = append(lines, line.String())
	}
	return lines
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func htmlEscape(s string) string { return xmlEscape(s) }

// pdfEscape keeps a line to the characters a WinAnsi literal string shows
// as they are.
func pdfEscape(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return ' '
		}
		return r
	}, s)
	return strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(s)
}

func firstSentence(p string) string {
	if i := strings.IndexAny(p, ".?!"); i > 0 && i < 200 {
		return p[:i+1]
	}
	if len(p) > 80 {
		return p[:80]
	}
	return p
}
