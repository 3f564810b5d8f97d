// Package openai implements ports.LLM for any server that speaks OpenAI's Chat
// Completions API: OpenAI itself, Azure OpenAI's v1 endpoint, Ollama, vLLM,
// llama.cpp's server, LiteLLM. It streams every answer, retries throttling and
// provider failures only while nothing has reached the caller yet, and maps
// provider failures to domain error kinds without ever showing the provider's
// text in an error message.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Defaults applied by New.
const (
	// DefaultTimeout bounds one Complete call, retries included, when
	// Options.Timeout is zero.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxRetries is the retry count a configuration should offer by
	// default; Options.MaxRetries itself is taken literally (0: no retry).
	DefaultMaxRetries = 2
)

// Backoff between attempts: exponential from retryBaseDelay, capped at
// retryMaxDelay, with jitter. A server-directed wait (Retry-After) longer than
// retryMaxDelay is not waited for: the call fails with the rate limit instead.
const (
	retryBaseDelay = 500 * time.Millisecond
	retryMaxDelay  = 8 * time.Second
)

// Options configures a Model.
type Options struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1",
	// "http://localhost:11434/v1" (Ollama) or "http://vllm:8000/v1".
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// Model is the default model name; CompletionRequest.Model overrides it.
	Model string
	// Timeout bounds one Complete call including retries and backoff
	// (0: DefaultTimeout).
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt (429, 5xx, connection
	// failure, a stream that breaks) is retried, and only while no content
	// has been passed to onDelta. 0 disables retries.
	MaxRetries int
	// MaxTokens caps an answer when the request does not (0: the server's
	// default).
	MaxTokens int
	// UseMaxCompletionTokens sends the cap as max_completion_tokens, which
	// OpenAI's reasoning models require, instead of max_tokens, which every
	// compatible server understands.
	UseMaxCompletionTokens bool
	// Headers are added to every request, e.g. {"api-key": ...} for Azure.
	Headers map[string]string
	// HTTPClient replaces the default client (a clone of
	// http.DefaultTransport's settings).
	HTTPClient *http.Client
	// Tools is ToolsAuto ("" means it) or ToolsOff. With ToolsAuto the
	// agent's tools and the decline tool are offered, and a server that
	// refuses tools (a 4xx, or a 500, whose error names them: vLLM without
	// --enable-auto-tool-choice, Ollama models without tool support,
	// llama.cpp without --jinja) is asked once more at once without them;
	// it is then asked without tools for ToolsRefusalMemory. With ToolsOff
	// no tool is ever offered. Without tools the model declines by
	// answering the marker NO_ANSWER, which becomes Completion.Declined.
	Tools string
}

// Tool modes (Options.Tools).
const (
	ToolsAuto = "auto"
	ToolsOff  = "off"
)

// ToolsRefusalMemory is how long a Model asks without tools after its
// server refused them, so that each answer does not pay for a refused
// request first. A server upgraded meanwhile gets tools again after it.
const ToolsRefusalMemory = 10 * time.Minute

// Model is a ports.LLM backed by an OpenAI-compatible server. It is safe for
// concurrent use.
type Model struct {
	chat       oai.ChatCompletionService
	model      string
	timeout    time.Duration
	maxRetries int
	maxTokens  int
	maxCompTok bool
	apiKey     string
	toolsOff   bool
	// toolsRefusedUntil is when, in Unix nanoseconds, tools are offered
	// again after the server refused them (0: they are).
	toolsRefusedUntil atomic.Int64
	now               func() time.Time

	// Backoff bounds; tests shorten them.
	baseDelay time.Duration
	maxDelay  time.Duration
}

var _ ports.LLM = (*Model)(nil)

// New validates opts and returns a Model. It makes no network call.
func New(opts Options) (*Model, error) {
	base, err := url.Parse(strings.TrimSpace(opts.BaseURL))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, errors.New("openai: base URL must be an absolute http(s) URL")
	}
	model := strings.TrimSpace(opts.Model)
	if model == "" {
		return nil, errors.New("openai: model is required")
	}
	if opts.Timeout < 0 || opts.MaxRetries < 0 || opts.MaxTokens < 0 {
		return nil, errors.New("openai: timeout, max retries and max tokens must not be negative")
	}
	switch opts.Tools {
	case "", ToolsAuto, ToolsOff:
	default:
		return nil, fmt.Errorf("openai: tools must be %q or %q, not %q", ToolsAuto, ToolsOff, opts.Tools)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	client := opts.HTTPClient
	if client == nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		client = &http.Client{Transport: transport}
	}
	// The chat service is built from explicit options only: openai.NewClient
	// would also pick up OPENAI_* variables from the environment.
	reqOpts := []option.RequestOption{
		option.WithHTTPClient(client),
		option.WithBaseURL(base.String()),
		option.WithAPIKey(opts.APIKey),
		// Retries are ours: the SDK retries only on response headers, while
		// a stream can also break before its first token.
		option.WithMaxRetries(0),
	}
	for k, v := range opts.Headers {
		reqOpts = append(reqOpts, option.WithHeader(k, v))
	}
	return &Model{
		chat:       oai.NewChatCompletionService(reqOpts...),
		model:      model,
		timeout:    timeout,
		maxRetries: opts.MaxRetries,
		maxTokens:  opts.MaxTokens,
		maxCompTok: opts.UseMaxCompletionTokens,
		apiKey:     opts.APIKey,
		toolsOff:   opts.Tools == ToolsOff,
		now:        time.Now,
		baseDelay:  retryBaseDelay,
		maxDelay:   retryMaxDelay,
	}, nil
}

// modelName is the model req runs on.
func (m *Model) modelName(req ports.CompletionRequest) string {
	if name := strings.TrimSpace(req.Model); name != "" {
		return name
	}
	return m.model
}

// Complete implements ports.LLM. It streams one model turn, passing each
// content fragment to onDelta in order. Throttling (429), server errors (5xx),
// connection failures and streams that break are retried with backoff up to
// MaxRetries times, but only until the first fragment reached onDelta; after
// that the failure is returned with the partial Completion. Errors wrap
// domain.ErrUnavailable (also for rejected credentials: the end user cannot fix
// our configuration), domain.ErrRateLimited (a *domain.RateLimitError when the
// provider said when to retry) or domain.ErrInvalidInput (the provider refused
// the request); a cancelled ctx returns ctx.Err() and an error from onDelta is
// returned as is. A server that refuses tools is asked once more without
// them (see Options.Tools); that attempt is not one of MaxRetries.
//
// With Knowledge, an answer that opens like the decline marker
// (NO_ANSWER) is held back until it is clearly something else; if it is
// the marker, nothing reaches onDelta and the Completion is Declined.
func (m *Model) Complete(ctx context.Context, req ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	if err := ctx.Err(); err != nil {
		return ports.Completion{}, err
	}
	withTools := m.offersTools()
	params, err := m.params(req, withTools)
	if err != nil {
		return ports.Completion{}, err
	}
	if onDelta == nil {
		onDelta = func(string) error { return nil }
	}
	callCtx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()

	for attempt := 0; ; attempt++ {
		res := m.stream(callCtx, params, onDelta, len(req.Knowledge) > 0)
		comp := res.completion(req.Knowledge)
		comp.Model = m.modelName(req)
		switch {
		case res.callbackErr != nil:
			return comp, res.callbackErr
		case res.err == nil:
			return comp, nil
		case ctx.Err() != nil:
			return comp, ctx.Err()
		case callCtx.Err() != nil:
			return comp, timeoutError(attempt+1, res.err)
		}
		f := classify(res.err, res.httpRes, m.apiKey)
		if f.toolsRefused && len(params.Tools) > 0 && !res.delivered {
			// The server takes no tools: ask again at once without them,
			// declining by the marker, and remember it for a while.
			m.toolsRefusedUntil.Store(m.now().Add(ToolsRefusalMemory).UnixNano())
			withTools = false
			if params, err = m.params(req, withTools); err != nil {
				return comp, err
			}
			attempt-- // not a retry of the same request
			continue
		}
		if res.delivered || !f.retryable || attempt >= m.maxRetries {
			return comp, f.toError(attempt + 1)
		}
		wait, ok := openaicompat.Backoff(callCtx, attempt, f.retryAfter, m.baseDelay, m.maxDelay)
		if !ok {
			return comp, f.toError(attempt + 1)
		}
		timer := time.NewTimer(wait)
		select {
		case <-callCtx.Done():
			timer.Stop()
			if ctx.Err() != nil {
				return ports.Completion{}, ctx.Err()
			}
			return ports.Completion{}, timeoutError(attempt+1, res.err)
		case <-timer.C:
		}
	}
}

// offersTools reports whether this call may offer tools: not with
// ToolsOff, nor while a refusal is remembered.
func (m *Model) offersTools() bool {
	if m.toolsOff {
		return false
	}
	until := m.toolsRefusedUntil.Load()
	return until == 0 || m.now().UnixNano() >= until
}

// streamResult is the outcome of one streamed request.
type streamResult struct {
	content     strings.Builder
	acc         oai.ChatCompletionAccumulator
	usage       domain.Usage
	delivered   bool
	err         error
	callbackErr error
	httpRes     *http.Response
	// holding: the content so far may be the decline marker, so it has
	// not been passed on; declined: it was the marker.
	holding, declined bool
}

// errIncomplete marks a stream that ended without the model finishing its
// turn (no finish_reason): a proxy or server cut it short.
var errIncomplete = errors.New("stream ended before the model finished")

// errMalformed marks a chunk the accumulator could not take.
var errMalformed = errors.New("malformed stream chunk")

func (m *Model) stream(ctx context.Context, params oai.ChatCompletionNewParams, onDelta func(string) error, knowledge bool) *streamResult {
	a := &streamResult{holding: knowledge}
	s := m.chat.NewStreaming(ctx, params, option.WithResponseInto(&a.httpRes))
	defer s.Close()
	finished := false
	for s.Next() {
		chunk := s.Current()
		if !a.acc.AddChunk(chunk) {
			a.err = errMalformed
			return a
		}
		// Servers that stream usage continuously send running totals: the
		// last report is the answer's, so keep it rather than add them up.
		if chunk.Usage.PromptTokens != 0 || chunk.Usage.CompletionTokens != 0 {
			a.usage = domain.Usage{PromptTokens: int(chunk.Usage.PromptTokens), CompletionTokens: int(chunk.Usage.CompletionTokens)}
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			if choice.FinishReason != "" {
				finished = true
			}
			if d := choice.Delta.Content; d != "" {
				a.content.WriteString(d)
				if a.holding {
					if mayBeDecline(a.content.String()) {
						continue
					}
					a.holding, d = false, a.content.String()
				}
				a.delivered = true
				if err := onDelta(d); err != nil {
					a.callbackErr = err
					return a
				}
			}
		}
	}
	if err := s.Err(); err != nil {
		a.err = err
		return a
	}
	if !finished {
		a.err = errIncomplete
		return a
	}
	if a.holding && a.content.Len() > 0 {
		a.holding = false
		if isDecline(a.content.String()) {
			a.declined = true
			return a
		}
		// Only the start of the marker, or blank: an answer after all.
		a.delivered = true
		if err := onDelta(a.content.String()); err != nil {
			a.callbackErr = err
		}
	}
	return a
}

// mayBeDecline reports whether an answer that opens with s may still be
// the decline marker: s, past leading blanks and markup, is a start of it,
// or starts with it.
func mayBeDecline(s string) bool {
	t := strings.TrimLeft(s, markerTrim)
	if len(t) <= len(declineMarker) {
		return strings.EqualFold(t, declineMarker[:len(t)])
	}
	return strings.EqualFold(t[:len(declineMarker)], declineMarker)
}

// isDecline reports whether a whole answer is the decline marker, alone or
// followed by a reason ("NO_ANSWER: the passages do not name Canada").
func isDecline(s string) bool {
	t := strings.Trim(s, markerTrim)
	if len(t) < len(declineMarker) || !strings.EqualFold(t[:len(declineMarker)], declineMarker) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(t[len(declineMarker):])
	return r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

// markerTrim is what may wrap the marker: blanks, quotes and markup.
const markerTrim = " \t\r\n`\"'*_"

// completion is what the attempt produced, complete or not.
func (a *streamResult) completion(knowledge []domain.Chunk) ports.Completion {
	if a.declined {
		// The marker was never shown: the decline has no text.
		return ports.Completion{Declined: true, Usage: a.usage}
	}
	comp := ports.Completion{Content: a.content.String(), Usage: a.usage}
	if a.holding {
		comp.Content = "" // held back, never passed on
	}
	if len(a.acc.Choices) > 0 {
		for _, tc := range a.acc.Choices[0].Message.ToolCalls {
			if tc.ID == "" && tc.Function.Name == "" {
				continue // a hole left by a sparse index
			}
			if tc.Function.Name == declineTool && len(knowledge) > 0 {
				comp.Declined = true
				continue
			}
			comp.ToolCalls = append(comp.ToolCalls, domain.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	// A model that declines and also calls tools has said it cannot answer:
	// its other calls are not run, as they may act (a handoff) on an answer
	// that will not come.
	if comp.Declined {
		comp.ToolCalls = nil
	}
	comp.Cited = citedIDs(comp.Content, knowledge)
	return comp
}

func timeoutError(attempts int, cause error) error {
	return &openaicompat.ProviderError{
		Service:  service,
		Kind:     domain.ErrUnavailable,
		What:     fmt.Sprintf("model provider did not answer in time (%d attempts)", attempts),
		Attempts: attempts,
		Cause:    cause,
		LogCause: cause.Error(),
	}
}
