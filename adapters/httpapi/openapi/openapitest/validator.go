// Package openapitest lets tests of any package check real HTTP responses
// against Concierge's OpenAPI description, so the document and the server
// cannot drift apart silently.
//
// Typical use, in a handler or end-to-end test:
//
//	v := openapitest.New(t)
//	resp, _ := http.DefaultClient.Do(req)
//	body, _ := io.ReadAll(resp.Body)
//	v.ValidateResponse(t, req, resp, body)
package openapitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/conciergehq/concierge/adapters/httpapi/openapi"
)

// Validator checks responses against the embedded OpenAPI document.
// It is safe for concurrent use by parallel tests.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

type loaded struct {
	doc    *openapi3.T
	router routers.Router
}

// load parses and validates the document once per test binary: it is
// immutable, and re-validating it in every test would only cost time.
var load = sync.OnceValues(func() (loaded, error) {
	raw, err := openapi.Document()
	if err != nil {
		return loaded{}, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return loaded{}, fmt.Errorf("load openapi document: %w", err)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation()); err != nil {
		return loaded{}, fmt.Errorf("openapi document is invalid: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return loaded{}, fmt.Errorf("openapi document is version %q, want 3.1", doc.OpenAPI)
	}
	// Tests run servers on arbitrary http://127.0.0.1:<port> addresses. Without
	// servers the router matches on the path alone, whatever the host.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return loaded{}, fmt.Errorf("build router: %w", err)
	}
	return loaded{doc: doc, router: router}, nil
})

// New returns a Validator for the embedded document. It fails the test if the
// document does not load or is not a valid OpenAPI 3.1 description.
func New(t testing.TB) *Validator {
	t.Helper()
	l, err := load()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	return &Validator{doc: l.doc, router: l.router}
}

// ValidateResponse fails the test unless resp is an answer the document allows
// for req: the route and method are documented, the status is listed for the
// operation, required headers are present and well-formed, and the body
// (given separately, since resp.Body is usually consumed already) matches the
// schema of its media type. Server-Sent Events bodies are checked event by
// event against the StreamEvent schema. A 405 on a documented path is accepted
// with a METHOD_NOT_ALLOWED error body, as the document's description promises.
func (v *Validator) ValidateResponse(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if req == nil || resp == nil {
		t.Errorf("openapitest: ValidateResponse needs a request and a response")
		return
	}
	what := req.Method + " " + req.URL.Path + " -> " + resp.Status

	route, pathParams, err := v.router.FindRoute(routable(req))
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("openapitest: %s: method %s is not documented for this path", what, req.Method)
			return
		}
		v.validateMethodNotAllowed(t, what, resp, body)
		return
	case err != nil:
		t.Errorf("openapitest: %s: route is not in the OpenAPI document: %v", what, err)
		return
	}

	responseRef := route.Operation.Responses.Status(resp.StatusCode)
	if responseRef == nil || responseRef.Value == nil {
		t.Errorf("openapitest: %s: status %d is not documented for operation %s", what, resp.StatusCode, route.Operation.OperationID)
		return
	}
	documented := responseRef.Value

	mediaType := contentType(resp.Header)
	if len(documented.Content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			t.Errorf("openapitest: %s: documented without a body, got %d bytes: %s", what, len(body), excerpt(body))
		}
	} else if documented.Content.Get(resp.Header.Get("Content-Type")) == nil {
		t.Errorf("openapitest: %s: Content-Type %q is not documented (want one of %v)", what, resp.Header.Get("Content-Type"), keys(documented.Content))
		return
	}

	// Body decoding in openapi3filter only knows JSON-like media types, so an
	// event stream has its headers checked there and its events checked here.
	isStream := mediaType == "text/event-stream"
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: pathParams,
			Route:      route,
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			ExcludeResponseBody:   isStream,
		},
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		t.Errorf("openapitest: %s: response does not match the OpenAPI document: %v\nbody: %s", what, err, excerpt(body))
	}
	if isStream {
		v.validateStream(t, what, body)
	}
}

// validateMethodNotAllowed checks the answer to a method the path does not
// have: the one error body with METHOD_NOT_ALLOWED and a request id.
func (v *Validator) validateMethodNotAllowed(t testing.TB, what string, resp *http.Response, body []byte) {
	t.Helper()
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("openapitest: %s: missing X-Request-Id header", what)
	}
	if err := v.validateSchema("Error", body); err != nil {
		t.Errorf("openapitest: %s: body is not an Error: %v\nbody: %s", what, err, excerpt(body))
		return
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != "METHOD_NOT_ALLOWED" {
		t.Errorf("openapitest: %s: want error code METHOD_NOT_ALLOWED, body: %s", what, excerpt(body))
	}
}

// validateStream checks every SSE event's data against StreamEvent. Events
// are separated by blank lines; several data lines of one event join with
// newlines, and comment lines (": ping") carry nothing.
func (v *Validator) validateStream(t testing.TB, what string, body []byte) {
	t.Helper()
	var data []string
	n := 0
	flush := func() {
		if len(data) == 0 {
			return
		}
		n++
		payload := strings.Join(data, "\n")
		data = data[:0]
		if err := v.validateSchema("StreamEvent", []byte(payload)); err != nil {
			t.Errorf("openapitest: %s: SSE event %d does not match StreamEvent: %v\ndata: %s", what, n, err, excerpt([]byte(payload)))
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Errorf("openapitest: %s: reading SSE body: %v", what, err)
	}
	if n == 0 {
		t.Errorf("openapitest: %s: event stream carries no data events", what)
	}
}

// validateSchema validates a JSON document against a named component schema.
func (v *Validator) validateSchema(name string, raw []byte) error {
	ref := v.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("schema %s is not in the document", name)
	}
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return ref.Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse(), openapi3.MultiErrors())
}

// routable copies the request with only path and query, so routing ignores
// the test server's scheme, host and port.
func routable(req *http.Request) *http.Request {
	r := req.Clone(context.Background())
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	r.Host = ""
	return r
}

func contentType(h http.Header) string {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

func keys(c openapi3.Content) []string {
	return slices.Sorted(maps.Keys(c))
}

// excerpt keeps failure messages readable when a body is large.
func excerpt(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
