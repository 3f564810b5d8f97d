package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/core/domain"
)

// service names this adapter in its errors' messages.
const service = "openai"

// failure is a classified attempt error.
type failure struct {
	status     int
	kind       error
	what       string
	retryable  bool
	retryAfter time.Duration
	detail     string
	cause      error
	logCause   string
	// toolsRefused: the server refused the request because of its tools
	// (see refusesTools).
	toolsRefused bool
}

func (f failure) toError(attempts int) error {
	kind := f.kind
	if errors.Is(kind, domain.ErrRateLimited) && f.retryAfter > 0 {
		kind = &domain.RateLimitError{RetryAfterSeconds: int(math.Ceil(f.retryAfter.Seconds()))}
	}
	what := f.what
	if attempts > 1 {
		what += fmt.Sprintf(" after %d attempts", attempts)
	}
	return &openaicompat.ProviderError{Service: service, Kind: kind, What: what, Status: f.status, Attempts: attempts, Detail: f.detail, Cause: f.cause, LogCause: f.logCause}
}

// classify decides what an attempt's error means and whether another attempt
// may help. res is the HTTP response when one arrived.
func classify(err error, res *http.Response, apiKey string) failure {
	f := classifyErr(err, res, apiKey)
	f.logCause = openaicompat.Redact(err.Error(), apiKey)
	f.toolsRefused = refusesTools(f, err, res)
	return f
}

// refusesTools reports whether a failure is a server refusing tools: a
// client error (400, 422) or a server error (500, 501) whose error text
// names them. vLLM answers 400 "\"auto\" tool choice requires
// --enable-auto-tool-choice", Ollama 400 "... does not support tools",
// llama.cpp 500 "tools param requires --jinja flag", OpenAI-style servers
// 400 with param "tools" or "tool_choice". The text read is the error's
// whole (status line and body, or the stream's error event), so that
// servers with their own error shape are recognised too.
func refusesTools(f failure, err error, res *http.Response) bool {
	var streamErr *ssestream.StreamError
	switch f.status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusInternalServerError, http.StatusNotImplemented:
	case 0:
		// An error event in a 200 stream without a status (mock-llm's
		// way of refusing): its text decides.
		if !errors.As(err, &streamErr) {
			return false
		}
	default:
		return false
	}
	text := strings.ToLower(f.detail + " " + err.Error())
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		text += " " + strings.ToLower(apiErr.Param+" "+apiErr.RawJSON())
		if res == nil {
			res = apiErr.Response
		}
	}
	if res != nil && res.Body != nil {
		// Not OpenAI's error shape ({"error": "text"}, {"detail": ...}):
		// the SDK left the body readable.
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		text += " " + strings.ToLower(string(body))
	}
	return strings.Contains(text, "tool") || strings.Contains(text, "function call")
}

func classifyErr(err error, res *http.Response, apiKey string) failure {
	var apiErr *oai.Error
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr):
		detail := openaicompat.JoinDetail(apiErr.Type, apiErr.Code, apiErr.Message)
		f := byStatus(apiErr.StatusCode, apiErr.Code, apiErr.Type)
		f.detail, f.cause = openaicompat.Redact(detail, apiKey), err
		f.retryAfter = openaicompat.RetryAfter(apiErr.Response)
		return f
	case res != nil && res.StatusCode >= 400:
		// The body was not OpenAI's error shape (a proxy's HTML page, a
		// server's own JSON): the status is all we trust.
		f := byStatus(res.StatusCode, "", "")
		f.cause, f.retryAfter = err, openaicompat.RetryAfter(res)
		return f
	case errors.As(err, &streamErr):
		// An error event inside a 200 stream. Servers put an HTTP-like status
		// in code or status (vLLM, LiteLLM) or only a type (OpenAI).
		status, code, typ, msg := parseStreamError(streamErr.Event.Data)
		f := byStatus(status, code, typ)
		f.detail, f.cause = openaicompat.Redact(openaicompat.JoinDetail(typ, code, msg), apiKey), err
		if status == 0 {
			f.status = 0
		}
		return f
	case errors.Is(err, errMalformed):
		return failure{kind: domain.ErrUnavailable, what: "model provider sent a malformed stream", retryable: true, cause: err}
	case errors.Is(err, errIncomplete):
		return failure{kind: domain.ErrUnavailable, what: "model provider ended the stream early", retryable: true, cause: err}
	default:
		// Connection refused or reset, TLS, DNS, a broken stream body, a
		// response that is not a stream at all.
		return failure{kind: domain.ErrUnavailable, what: "model provider connection failed", retryable: true, cause: err}
	}
}

// byStatus maps a provider status (or, without one, its error code and type)
// to a kind.
func byStatus(status int, code, typ string) failure {
	if status == 0 {
		status = statusFromCode(code, typ)
	}
	switch {
	case status == http.StatusTooManyRequests && code == "insufficient_quota":
		// Billing, not throttling: waiting does not help and users cannot fix it.
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider quota exhausted"}
	case status == http.StatusTooManyRequests:
		return failure{status: status, kind: domain.ErrRateLimited, what: "model provider rate limit reached", retryable: true}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// Our credentials or permissions: a configuration error on our side.
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider rejected our credentials"}
	case status == http.StatusBadRequest || status == http.StatusNotFound ||
		status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		return failure{status: status, kind: domain.ErrInvalidInput, what: "model provider refused the request"}
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider failed", retryable: true}
	default:
		return failure{status: status, kind: domain.ErrUnavailable, what: "model provider answered unexpectedly"}
	}
}

// statusFromCode reads OpenAI-style error codes and types for in-stream errors
// that carry no status.
func statusFromCode(code, typ string) int {
	c := strings.ToLower(code + " " + typ)
	switch {
	case strings.Contains(c, "insufficient_quota"), strings.Contains(c, "rate_limit"), strings.Contains(c, "ratelimit"):
		return http.StatusTooManyRequests
	case strings.Contains(c, "invalid_api_key"), strings.Contains(c, "authentication"), strings.Contains(c, "permission"):
		return http.StatusUnauthorized
	case strings.Contains(c, "not_found"), strings.Contains(c, "notfound"):
		return http.StatusNotFound
	case strings.Contains(c, "invalid_request"), strings.Contains(c, "badrequest"), strings.Contains(c, "context_length"):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}

// parseStreamError reads {"error": {...}} or {"error": "text"} from an event.
func parseStreamError(data []byte) (status int, code, typ, msg string) {
	var ev struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return 0, "", "", ""
	}
	var s string
	if json.Unmarshal(ev.Error, &s) == nil {
		return 0, "", "", s
	}
	var body struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Status  json.RawMessage `json:"status"`
	}
	if json.Unmarshal(ev.Error, &body) != nil {
		return 0, "", "", ""
	}
	code = rawString(body.Code)
	status = httpStatus(rawString(body.Status))
	if status == 0 {
		status = httpStatus(code)
	}
	return status, code, body.Type, body.Message
}

// rawString turns a JSON string or number into its text; null is "".
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func httpStatus(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 400 || n > 599 {
		return 0
	}
	return n
}
