package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Request bodies are refused as soon as they pass their route's limit,
// over a real TCP connection: these tests write requests by hand, send
// only part of a body, and read the answer without sending the rest.

// wireConn is a client connection written and read by hand.
type wireConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (s *stack) dialWire(t *testing.T) *wireConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A safety net: a server that waits for the rest of a body fails the
	// test here instead of hanging it.
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return &wireConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (w *wireConn) write(p []byte) {
	w.t.Helper()
	if _, err := w.c.Write(p); err != nil {
		w.t.Fatalf("writing the request: %v", err)
	}
}

// head writes a request head; declared < 0 sends the body chunked.
func (w *wireConn) head(method, path string, declared int, h header) {
	w.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: concierge\r\n", method, path)
	if declared < 0 {
		b.WriteString("Transfer-Encoding: chunked\r\n")
	} else {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", declared)
	}
	for k, v := range h {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	w.write([]byte(b.String()))
}

// chunked writes p as chunks of at most 64 KiB.
func (w *wireConn) chunked(p []byte) {
	w.t.Helper()
	for len(p) > 0 {
		n := min(len(p), 64<<10)
		w.write(fmt.Appendf(nil, "%x\r\n%s\r\n", n, p[:n]))
		p = p[n:]
	}
}

func (w *wireConn) endChunks() { w.t.Helper(); w.write([]byte("0\r\n\r\n")) }

// answer reads one response.
func (w *wireConn) answer() (status int, code string, resp *http.Response) {
	w.t.Helper()
	resp, err := http.ReadResponse(w.br, nil)
	if err != nil {
		w.t.Fatalf("no answer: %v", err)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("reading the answer: %v", err)
	}
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(raw, &body)
	return resp.StatusCode, body.Error.Code, resp
}

// closedCleanly checks the server ends the connection with an orderly
// shutdown after its answer, not a reset that could have cost the client
// the answer.
func (w *wireConn) closedCleanly() {
	w.t.Helper()
	if n, err := io.Copy(io.Discard, w.br); err != nil || n != 0 {
		if errors.Is(err, syscall.ECONNRESET) {
			w.t.Fatal("the connection was reset after the answer")
		}
		w.t.Fatalf("after the answer: %d bytes, %v", n, err)
	}
}

// multipartHead is the start of a file upload's form, up to the file's
// first byte, and its closing.
func multipartHead(t *testing.T) (contentType string, start, end []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("type", "file"); err != nil {
		t.Fatal(err)
	}
	if _, err := mw.CreateFormFile("file", "big.txt"); err != nil {
		t.Fatal(err)
	}
	start = bytes.Clone(buf.Bytes())
	buf.Reset()
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), start, bytes.Clone(buf.Bytes())
}

func TestBodyLimitPerRoute(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	contentType, formStart, _ := multipartHead(t)
	const (
		jsonLimit   = 1 << 20
		otherLimit  = 4 << 10
		uploadLimit = domain.MaxSourceFileBytes + 64<<10
	)
	authJSON := header{"Authorization": "Bearer " + tn.Key, "Content-Type": "application/json"}
	authUpload := header{"Authorization": "Bearer " + tn.Key, "Content-Type": contentType}
	tests := []struct {
		name         string
		method, path string
		h            header
		// declared is the Content-Length (-1: chunked); send is how much
		// of the body goes out before the answer is read; end sends the
		// whole body (and the last chunk).
		declared, send int
		end            bool
		status         int
		code           string
	}{
		{"no-body route at its limit", "GET", "/healthz", nil, otherLimit, otherLimit, true, 200, ""},
		{"no-body route, 64 KiB", "GET", "/healthz", nil, 64 << 10, 64 << 10, true, 413, "PAYLOAD_TOO_LARGE"},
		{"no-body route, chunked 64 KiB", "GET", "/healthz", nil, -1, 64 << 10, true, 413, "PAYLOAD_TOO_LARGE"},
		{"no-body API route, 64 KiB", "GET", "/api/v2/agents", authJSON, 64 << 10, 64 << 10, true, 413, "PAYLOAD_TOO_LARGE"},
		{"widget page, 64 KiB", "GET", "/chat/support", nil, 64 << 10, 64 << 10, true, 413, "PAYLOAD_TOO_LARGE"},
		{"JSON at its limit", "POST", "/api/v2/agents", authJSON, jsonLimit, jsonLimit, true, 400, "VALIDATION_ERROR"},
		{"JSON at its limit, chunked", "POST", "/api/v2/agents", authJSON, -1, jsonLimit, true, 400, "VALIDATION_ERROR"},
		{"JSON one byte over", "POST", "/api/v2/agents", authJSON, jsonLimit + 1, jsonLimit + 1, true, 413, "PAYLOAD_TOO_LARGE"},
		{"JSON one byte over, chunked", "POST", "/api/v2/agents", authJSON, -1, jsonLimit + 1, true, 413, "PAYLOAD_TOO_LARGE"},
		{"JSON declared 5 MiB, 16 KiB sent", "POST", "/api/v2/agents", authJSON, 5 << 20, 16 << 10, false, 413, "PAYLOAD_TOO_LARGE"},
		{"JSON chunked past the limit, no end", "POST", "/api/webhooks/inbound", header{"Content-Type": "application/json"}, -1, jsonLimit + 64<<10, false, 413, "PAYLOAD_TOO_LARGE"},
		{"upload declared 21 MiB, 16 KiB sent", "POST", "/api/v2/agents/support/sources", authUpload, 21 << 20, 16 << 10, false, 413, "PAYLOAD_TOO_LARGE"},
		{"upload declared 50 MiB, 16 KiB sent", "POST", "/api/v2/agents/support/sources", authUpload, 50 << 20, 16 << 10, false, 413, "PAYLOAD_TOO_LARGE"},
		{"upload chunked past the limit, no end", "POST", "/api/v2/agents/support/sources", authUpload, -1, uploadLimit + 64<<10, false, 413, "PAYLOAD_TOO_LARGE"},
		{"upload without a key, declared 10 MiB, 16 KiB sent", "POST", "/api/v2/agents/support/sources", header{"Content-Type": contentType}, 10 << 20, 16 << 10, false, 401, "UNAUTHORIZED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := s.dialWire(t)
			w.head(tt.method, tt.path, tt.declared, tt.h)
			body := bytes.Repeat([]byte("a"), tt.send)
			if strings.HasSuffix(tt.path, "/sources") {
				body = append(bytes.Clone(formStart), body[min(len(formStart), len(body)):]...)
			}
			if tt.declared < 0 {
				w.chunked(body)
				if tt.end {
					w.endChunks()
				}
			} else {
				w.write(body)
			}
			status, code, resp := w.answer()
			if status != tt.status || code != tt.code {
				t.Fatalf("got %d %s, want %d %s", status, code, tt.status, tt.code)
			}
			if !tt.end || status == 413 {
				// Part of the body is unread: the connection must close, in
				// an orderly way.
				if !resp.Close {
					t.Fatal("the answer does not close the connection")
				}
				w.closedCleanly()
			}
		})
	}
}

// uploadBody is a file upload's whole form around a file of n bytes.
func uploadBody(t *testing.T, n int) (contentType string, body []byte) {
	t.Helper()
	contentType, start, end := multipartHead(t)
	body = append(start, bytes.Repeat([]byte("a"), n)...)
	return contentType, append(body, end...)
}

// A file of exactly 20 MiB is accepted; one byte more is 413, whether the
// body's length is declared or it is sent chunked.
func TestUploadAtTheFileLimit(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	tests := []struct {
		name    string
		size    int
		chunked bool
		status  int
	}{
		{"20 MiB", domain.MaxSourceFileBytes, false, 201},
		{"20 MiB, chunked", domain.MaxSourceFileBytes, true, 201},
		{"20 MiB and a byte", domain.MaxSourceFileBytes + 1, false, 413},
		{"20 MiB and a byte, chunked", domain.MaxSourceFileBytes + 1, true, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			contentType, body := uploadBody(t, tt.size)
			var reader io.Reader = bytes.NewReader(body)
			if tt.chunked {
				reader = io.MultiReader(reader) // no known length: net/http sends it chunked
			}
			req, err := http.NewRequest("POST", s.base+"/api/v2/agents/support/sources", reader)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", contentType)
			req.Header.Set("Authorization", "Bearer "+tn.Key)
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, raw, tt.status)
			}
			req.Body = http.NoBody
			s.spec.ValidateResponse(t, req, resp, raw)
		})
	}
}

// With one slot for large bodies, an upload that needs one while another
// holds it is refused with 503 and Retry-After, unread; once the holder
// is done, the next gets the slot.
func TestLargeBodySlotsRefuseWhenTaken(t *testing.T) {
	s := newStack(t, stackOptions{env: map[string]string{"CONCIERGE_LARGE_BODY_SLOTS": "1", "CONCIERGE_LARGE_BODY_WAIT": "0s"}})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	contentType, form := uploadBody(t, 1000)
	h := header{"Authorization": "Bearer " + tn.Key, "Content-Type": contentType}
	half := len(form) / 2
	// A probe is a whole chunked upload (chunked bodies need a slot) to an
	// agent that does not exist: 404 once read, 503 if refused unread.
	probe := func() (int, string, *wireConn) {
		w := s.dialWire(t)
		w.head("POST", "/api/v2/agents/nobody/sources", -1, h)
		w.chunked(form)
		w.endChunks()
		status, code, resp := w.answer()
		if status == 503 && resp.Header.Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
		return status, code, w
	}

	// The holder sends half its body and waits. Until the server has given
	// it the slot, a probe may take the slot first and the holder is
	// refused: then try again. So may an earlier attempt's holder, closed
	// by the client but not yet seen closed by the server: then both the
	// probe and this holder are refused, and the next attempt tries again.
	for attempt := 1; ; attempt++ {
		if attempt > 20 {
			t.Fatal("no attempt saw the holder keep the slot while a probe was refused")
		}
		holder := s.dialWire(t)
		holder.head("POST", "/api/v2/agents/support/sources", -1, h)
		holder.chunked(form[:half])
		status, code, w := probe()
		if status == 503 {
			if code != "UNAVAILABLE" {
				t.Fatalf("refused probe: %d %s", status, code)
			}
			w.closedCleanly()
			holder.chunked(form[half:])
			holder.endChunks()
			status, code, _ := holder.answer()
			if status == 201 {
				break
			}
			if status != 503 || code != "UNAVAILABLE" {
				t.Fatalf("the holder: %d %s", status, code)
			}
			holder.c.Close()
			continue
		}
		if status != 404 {
			t.Fatalf("probe %d: %d %s, want 503 while the holder reads", attempt, status, code)
		}
		holder.c.Close()
	}
	if status, code, _ := probe(); status != 404 {
		t.Fatalf("probe after the holder finished: %d %s, want 404 (read, then no such agent)", status, code)
	}
}
