package httpapitest

import (
	"errors"
	"net/http"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// Case is one row of a handler test table: a request, what the fakes
// return, and what the answer must be.
type Case struct {
	Name   string
	Req    Request
	Script map[string]Result
	Want   Want
	// Calls checks what the use cases were asked, when it matters.
	Calls func(t *testing.T, s *Script)
}

// Run runs each case against a fresh app from newApp, whose fakes share
// the case's Script.
func Run(t *testing.T, route string, newApp func(testing.TB, *Script) *App, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(route+"/"+tc.Name, func(t *testing.T) {
			s := NewScript(tc.Script)
			newApp(t, s).Do(t, tc.Req).Check(t, tc.Want)
			if tc.Calls != nil {
				tc.Calls(t, s)
			}
		})
	}
}

// OnlyCall returns the arguments of method's one call.
func OnlyCall(t *testing.T, s *Script, method string) []any {
	t.Helper()
	calls := s.Calls(method)
	if len(calls) != 1 {
		t.Fatalf("%s called %d times, want once", method, len(calls))
	}
	return calls[0]
}

// Errors as use cases return them, by the status the ErrorHandler answers
// them with.
var (
	ErrInvalid      = domain.InvalidField("name", "is required")
	ErrUnauthorized = domain.Unauthorized("invalid identity signature")
	ErrPlan         = &domain.PlanError{Feature: domain.FeatureHandoff, Plan: domain.PlanHobby}
	ErrNotFound     = domain.NotFound("agent")
	ErrConflict     = domain.Conflict("slug %q is taken", "support")
	ErrUnavailable  = domain.Unavailable("the store", errors.New("connection refused"))
	// ErrBroken is an error of no domain kind: a bug.
	ErrBroken = errors.New("a bug")
)

// ErrorCases are cases for req in which the use case method fails with
// the error of each status, answered through the one ErrorHandler with the
// documented code and body.
func ErrorCases(req Request, method string, statuses ...int) []Case {
	byStatus := map[int]struct {
		err    error
		code   string
		fields map[string]any
	}{
		400: {ErrInvalid, domain.CodeValidation, map[string]any{"error.message": "name: is required", "error.details.name": "is required"}},
		401: {ErrUnauthorized, domain.CodeUnauthorized, map[string]any{"error.message": "invalid identity signature"}},
		403: {ErrPlan, domain.CodePlanUpgrade, map[string]any{"error.details.feature": "handoff", "error.details.plan": "hobby"}},
		404: {ErrNotFound, domain.CodeNotFound, map[string]any{"error.message": "agent not found"}},
		409: {ErrConflict, domain.CodeConflict, map[string]any{"error.message": `slug "support" is taken`}},
		// Never the error's own text.
		500: {ErrBroken, domain.CodeInternal, map[string]any{"error.message": "internal error"}},
		503: {ErrUnavailable, domain.CodeUnavailable, map[string]any{"error.message": "a dependency is unavailable; retry later"}},
	}
	var out []Case
	for _, status := range statuses {
		e, ok := byStatus[status]
		if !ok {
			panic("httpapitest: no error for status " + http.StatusText(status))
		}
		var header map[string]string
		if status == 503 {
			header = map[string]string{"Retry-After": "5"}
		}
		out = append(out, Case{
			Name:   method + " fails with " + e.code,
			Req:    req,
			Script: map[string]Result{method: {Err: e.err}},
			Want:   Want{Status: status, Code: e.code, Fields: e.fields, Header: header},
		})
	}
	return out
}

// BadBodies are the malformed bodies every JSON route refuses before its
// use case runs (nothing is scripted, so a call would fail the status).
func BadBodies(method, path string) []Case {
	req := func(body, contentType string) Request {
		return Request{Method: method, Path: path, Body: body, ContentType: contentType}
	}
	invalid := func(fields map[string]any) Want {
		return Want{Status: 400, Code: domain.CodeValidation, Fields: fields}
	}
	return []Case{
		{Name: "malformed JSON", Req: req(`{"a":`, ""), Want: invalid(nil)},
		{Name: "unknown field", Req: req(`{"nope":1}`, ""), Want: invalid(map[string]any{"error.details.nope": "is not a known field"})},
		{Name: "not an object", Req: req(`[1]`, ""), Want: invalid(map[string]any{"error.message": "invalid JSON: the body must be a JSON object"})},
		{Name: "trailing data", Req: req(`{}{}`, ""), Want: invalid(map[string]any{"error.message": "invalid JSON: unexpected data after the JSON object"})},
		{Name: "not UTF-8", Req: req("{\"x\":\"\xff\"}", ""), Want: invalid(nil)},
		{Name: "not JSON", Req: req(`a=b`, "application/x-www-form-urlencoded"), Want: Want{Status: 415, Code: "UNSUPPORTED_MEDIA_TYPE"}},
	}
}

// BadPages are the bad limit and cursor parameters every list refuses.
func BadPages(path string) []Case {
	get := func(query string) Request { return Request{Method: "GET", Path: path + query} }
	invalid := func(field, reason string) Want {
		return Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details." + field: reason}}
	}
	return []Case{
		{Name: "limit not a number", Req: get("?limit=ten"), Want: invalid("limit", "must be between 1 and 100")},
		{Name: "limit zero", Req: get("?limit=0"), Want: invalid("limit", "must be between 1 and 100")},
		{Name: "limit out of range", Req: get("?limit=101"), Want: invalid("limit", "must be between 1 and 100")},
		{Name: "cursor not ours", Req: get("?cursor=bm90LWEtY3Vyc29y"), Want: invalid("cursor", "is not a cursor issued by this API; pass meta.nextCursor unchanged")},
	}
}
