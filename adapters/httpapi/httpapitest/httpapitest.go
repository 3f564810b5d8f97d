// Package httpapitest runs one handler package's handlers (v1, v2,
// webhook) in a fiber app without the rest of the edge: no API-key lookup,
// rate limits or body limits, but the edge's one ErrorHandler, so every
// error a handler returns is answered exactly as in production. Responses
// are checked against the OpenAPI document.
package httpapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi"
	"github.com/conciergehq/concierge/adapters/httpapi/openapi/openapitest"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/workspace"
)

// Principal is the API-key caller the App authenticates every request as
// when built with one: workspace ws_test on the Enterprise plan.
func Principal() workspace.Principal {
	return workspace.Principal{
		Workspace: domain.Workspace{ID: "ws_test", Name: "Test", Plan: domain.PlanEnterprise, WebhookSecret: "whsec_test"},
		KeyID:     "key_test",
	}
}

// App is a fiber app serving the routes a test registers on it.
type App struct {
	*fiber.App
	validator *openapitest.Validator
}

// New returns an App with the edge's ErrorHandler. With a principal, every
// request carries it as the API-key middleware would set it.
func New(t testing.TB, principal *workspace.Principal) *App {
	t.Helper()
	app := fiber.New(fiber.Config{
		ErrorHandler:          httpapi.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil))),
		DisableStartupMessage: true,
	})
	app.Use(func(c *fiber.Ctx) error {
		// The edge's request-id middleware; the OpenAPI document requires
		// the header on every answer.
		c.Set("X-Request-Id", "req_test")
		if principal != nil {
			wire.SetPrincipal(c, *principal)
		}
		return c.Next()
	})
	return &App{App: app, validator: openapitest.New(t)}
}

// Request is one call. Body is sent as is; ContentType defaults to
// application/json when there is a body.
type Request struct {
	Method, Path string
	Body         string
	ContentType  string
	Header       map[string]string
}

// Response is an answer, read whole (a stream until it ends).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req, reads the whole answer and checks it against the OpenAPI
// document: the status must be documented for the route, and the body must
// match its schema (each SSE event the StreamEvent schema).
func (a *App) Do(t testing.TB, req Request) Response {
	t.Helper()
	var body io.Reader
	if req.Body != "" {
		body = strings.NewReader(req.Body)
	}
	r := httptest.NewRequest(req.Method, req.Path, body)
	if req.Body != "" {
		ct := req.ContentType
		if ct == "" {
			ct = fiber.MIMEApplicationJSON
		}
		r.Header.Set(fiber.HeaderContentType, ct)
	} else if req.ContentType != "" {
		r.Header.Set(fiber.HeaderContentType, req.ContentType)
	}
	for k, v := range req.Header {
		r.Header.Set(k, v)
	}
	resp, err := a.Test(r, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.Path, err)
	}
	// The validator reads the request again for its route only.
	vr := httptest.NewRequest(req.Method, req.Path, nil)
	a.validator.ValidateResponse(t, vr, resp, raw)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// Want is what a test expects of an answer: its status, its error code
// (for an error answer) and values at paths of its JSON body.
type Want struct {
	Status int
	// Code is error.code; "" asserts the answer is not an error body.
	Code string
	// Fields are values at dotted paths of the JSON body ("items.0.id",
	// "error.details.rating"), compared as fmt.Sprint prints them; the
	// value Absent asserts the path is not there.
	Fields map[string]any
	// Events are the types of the SSE events, in order, for a stream.
	Events []string
	// Header are response headers the answer must have.
	Header map[string]string
	// IDs are, when set, the id lines of the stream's events ("" for an
	// event without one).
	IDs []string
}

// Absent, as a value of Want.Fields, asserts a path is missing.
const Absent = "<absent>"

// Check compares resp with want.
func (r Response) Check(t testing.TB, want Want) {
	t.Helper()
	if r.Status != want.Status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, want.Status, r.Body)
	}
	for k, v := range want.Header {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s is %q, want %q", k, got, v)
		}
	}
	if want.Events != nil {
		got := []string{}
		for _, ev := range r.Events(t) {
			got = append(got, fmt.Sprint(ev["type"]))
		}
		if strings.Join(got, ",") != strings.Join(want.Events, ",") {
			t.Fatalf("events %v, want %v; body: %s", got, want.Events, r.Body)
		}
		if ids := r.IDs(); want.IDs != nil && strings.Join(ids, ",") != strings.Join(want.IDs, ",") {
			t.Fatalf("event ids %q, want %q; body: %s", ids, want.IDs, r.Body)
		}
		return
	}
	if len(r.Body) == 0 {
		if want.Code != "" || len(want.Fields) > 0 {
			t.Fatalf("empty body, want code %q and fields %v", want.Code, want.Fields)
		}
		return
	}
	var doc any
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.Body)
	}
	code, _ := lookup(doc, "error.code")
	if fmt.Sprint(code) != want.Code && !(code == nil && want.Code == "") {
		t.Fatalf("error code %v, want %q; body: %s", code, want.Code, r.Body)
	}
	for path, wantValue := range want.Fields {
		got, ok := lookup(doc, path)
		switch {
		case wantValue == Absent:
			if ok {
				t.Errorf("%s is %v, want it absent; body: %s", path, got, r.Body)
			}
		case !ok:
			t.Errorf("%s is missing; body: %s", path, r.Body)
		case fmt.Sprint(got) != fmt.Sprint(wantValue):
			t.Errorf("%s is %v, want %v; body: %s", path, got, wantValue, r.Body)
		}
	}
}

// Events are the data of the answer's SSE events, in order.
func (r Response) Events(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, block := range strings.Split(string(r.Body), "\n\n") {
		for _, line := range strings.Split(block, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %q is not JSON: %v", data, err)
			}
			out = append(out, ev)
		}
	}
	return out
}

// IDs are the id lines of the answer's SSE events, in order ("" for an
// event without one).
func (r Response) IDs() []string {
	var out []string
	for _, block := range strings.Split(string(r.Body), "\n\n") {
		if !strings.Contains(block, "data: ") {
			continue
		}
		id := ""
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
		}
		out = append(out, id)
	}
	return out
}

// lookup finds a dotted path in a decoded JSON document; numeric parts
// index arrays.
func lookup(doc any, path string) (any, bool) {
	cur := doc
	for _, part := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[part]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Multipart builds a multipart/form-data body of fields and one file part
// named file, returning the body and its Content-Type.
func Multipart(fields map[string]string, filename string, content []byte) (string, string) {
	var b bytes.Buffer
	const boundary = "httpapitestboundary"
	for k, v := range fields {
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=%q\r\n\r\n%s\r\n", boundary, k, v)
	}
	if filename != "" {
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=%q\r\nContent-Type: application/octet-stream\r\n\r\n", boundary, filename)
		b.Write(content)
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.String(), "multipart/form-data; boundary=" + boundary
}
