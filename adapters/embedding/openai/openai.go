// Package openai implements ports.Embedder for any server that speaks
// OpenAI's embeddings API (POST {base}/embeddings): OpenAI itself, Azure
// OpenAI's v1 endpoint, Ollama, vLLM, llama.cpp's server, LiteLLM. It splits
// large inputs into batches, retries throttling and provider failures with
// backoff, checks every answer (one finite vector per input, in index order,
// of one size) and maps failures to domain error kinds without ever showing
// the provider's text in an error message.
//
// The id of stored vectors must name their true size, so an Embedder knows
// its size from the start: Options.Dimensions when set (and then sent as the
// request's "dimensions"), otherwise New asks the server once, embedding a
// short probe text, and keeps the size of the answer. Either way ID and
// Dimensions never change during the Embedder's life, and an answer of
// another size is refused.
package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Defaults applied by New.
const (
	// DefaultTimeout bounds one request (one batch), retries and backoff
	// included, when Options.Timeout is zero.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxRetries is the retry count a configuration should offer by
	// default; Options.MaxRetries itself is taken literally (0: no retry).
	DefaultMaxRetries = 2
	// DefaultBatchSize is the number of texts per request when
	// Options.BatchSize is zero.
	DefaultBatchSize = 96
	// MaxBatchSize is OpenAI's limit on inputs per request.
	MaxBatchSize = 2048
)

// probeText is embedded by New to learn a model's native size.
const probeText = "dimension probe"

// Backoff between attempts: exponential from retryBaseDelay, capped at
// retryMaxDelay, with jitter. A server-directed wait (Retry-After) longer than
// retryMaxDelay is not waited for: the call fails with the rate limit instead.
const (
	retryBaseDelay = 500 * time.Millisecond
	retryMaxDelay  = 8 * time.Second
)

// Options configures an Embedder.
type Options struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1",
	// "http://localhost:11434/v1" (Ollama) or "http://vllm:8000/v1".
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// Model names the embedding model; required.
	Model string
	// Dimensions is the vector size. When set it is sent as the request's
	// "dimensions": OpenAI's text-embedding-3 models shorten their vectors
	// to it, but older models and some servers refuse the parameter (every
	// request then fails as refused input, with a warning logged) or ignore
	// it (answers of another size are refused as malformed). 0 takes the
	// model's native size, learned by a probe request in New, and sends no
	// "dimensions": the choice for any model but text-embedding-3.
	Dimensions int
	// Timeout bounds one request of up to BatchSize texts, retries and
	// backoff included (0: DefaultTimeout).
	Timeout time.Duration
	// MaxRetries is how many times a failed request (429, 5xx, timeout of
	// the server, connection failure, unreadable answer) is retried. 0
	// disables retries.
	MaxRetries int
	// BatchSize is the number of texts per request (0: DefaultBatchSize;
	// at most MaxBatchSize). Embed sends larger inputs as several requests,
	// one after the other.
	BatchSize int
	// Headers are added to every request, e.g. {"api-key": ...} for Azure.
	Headers map[string]string
	// HTTPClient replaces the default client (a clone of
	// http.DefaultTransport's settings).
	HTTPClient *http.Client
	// Logger receives the line logged when the provider rejects our
	// configuration (key, permissions, model); nil: slog.Default().
	Logger *slog.Logger
}

// Embedder is a ports.Embedder backed by an OpenAI-compatible server. It is
// safe for concurrent use.
type Embedder struct {
	svc        oai.EmbeddingService
	model      string
	dims       int
	sendDims   bool
	id         string
	timeout    time.Duration
	maxRetries int
	batchSize  int
	apiKey     string
	host       string // for log lines; never the key or the path
	log        *slog.Logger

	// Backoff bounds; tests shorten them.
	baseDelay time.Duration
	maxDelay  time.Duration
}

var _ ports.Embedder = (*Embedder)(nil)

// New validates opts and returns an Embedder. With opts.Dimensions set it
// makes no network call. With Dimensions 0 it embeds one short probe text
// (with the retries of any request) to learn the model's native size, and
// fails with the errors of Embed when the server cannot answer: ErrUnavailable
// for a wrong key, model or URL, so a misconfiguration shows at start-up.
// Setting Dimensions avoids the probe.
func New(ctx context.Context, opts Options) (*Embedder, error) {
	base, err := url.Parse(strings.TrimSpace(opts.BaseURL))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, errors.New("openai embeddings: base URL must be an absolute http(s) URL")
	}
	model := strings.TrimSpace(opts.Model)
	if model == "" {
		return nil, errors.New("openai embeddings: model is required")
	}
	if opts.Dimensions < 0 || opts.Timeout < 0 || opts.MaxRetries < 0 || opts.BatchSize < 0 {
		return nil, errors.New("openai embeddings: dimensions, timeout, max retries and batch size must not be negative")
	}
	if opts.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("openai embeddings: batch size must be at most %d", MaxBatchSize)
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// The service is built from explicit options only: openai.NewClient
	// would also pick up OPENAI_* variables from the environment.
	reqOpts := []option.RequestOption{
		option.WithHTTPClient(client),
		option.WithBaseURL(base.String()),
		option.WithAPIKey(opts.APIKey),
		// Retries are ours, so that every failure is classified and
		// counted the same way.
		option.WithMaxRetries(0),
	}
	for k, v := range opts.Headers {
		reqOpts = append(reqOpts, option.WithHeader(k, v))
	}
	e := &Embedder{
		svc:        oai.NewEmbeddingService(reqOpts...),
		model:      model,
		dims:       opts.Dimensions,
		sendDims:   opts.Dimensions > 0,
		timeout:    cmp.Or(opts.Timeout, DefaultTimeout),
		maxRetries: opts.MaxRetries,
		batchSize:  cmp.Or(opts.BatchSize, DefaultBatchSize),
		apiKey:     opts.APIKey,
		host:       base.Host,
		log:        opts.Logger,
		baseDelay:  retryBaseDelay,
		maxDelay:   retryMaxDelay,
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.dims == 0 {
		vecs, err := e.request(ctx, []string{probeText})
		if err != nil {
			return nil, err
		}
		e.dims = len(vecs[0])
	}
	e.id = fmt.Sprintf("openai:%s:%d", model, e.dims)
	return e, nil
}

// ID implements ports.Embedder: "openai:<model>:<dimensions>", e.g.
// "openai:text-embedding-3-small:1536". A model name may itself contain ':'
// (Ollama's "nomic-embed-text:latest"); the size is after the last one.
func (e *Embedder) ID() string { return e.id }

// Dimensions implements ports.Embedder.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed implements ports.Embedder. Texts are sent in batches of BatchSize,
// in order; a text that is empty or only white space is not sent (providers
// refuse "") and gets a zero vector, which matches nothing, like the local
// embedder's. Each request is retried on throttling (429), server errors
// (5xx, 408, 409), timeouts and connection failures up to MaxRetries times.
// Errors wrap domain.ErrRateLimited when throttling outlasts the retries (a
// *domain.RateLimitError when the provider said when to retry),
// domain.ErrInvalidInput (a *domain.ValidationError) when the provider
// refuses a text (400, 413, 422: too long, say), and domain.ErrUnavailable
// for everything else, our configuration included (401, 403, 404: bad key,
// permissions or model, logged at error level) and answers that fail the
// checks. A done ctx returns ctx.Err(). On error no vectors are returned,
// even if earlier batches succeeded.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	var pos []int
	var inputs []string
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			out[i] = make([]float32, e.dims)
			continue
		}
		pos = append(pos, i)
		inputs = append(inputs, t)
	}
	for start := 0; start < len(inputs); start += e.batchSize {
		end := min(start+e.batchSize, len(inputs))
		vecs, err := e.request(ctx, inputs[start:end])
		if err != nil {
			return nil, err
		}
		for j, v := range vecs {
			out[pos[start+j]] = v
		}
	}
	return out, nil
}

// request embeds one batch, retrying as Embed describes.
func (e *Embedder) request(ctx context.Context, inputs []string) ([][]float32, error) {
	callCtx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	params := oai.EmbeddingNewParams{
		Model: e.model,
		Input: oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
	}
	if e.sendDims {
		params.Dimensions = oai.Int(int64(e.dims))
	}
	for attempt := 0; ; attempt++ {
		var httpRes *http.Response
		res, err := e.svc.New(callCtx, params, option.WithResponseInto(&httpRes))
		if err == nil {
			vecs, err := decode(res, len(inputs), e.dims)
			if err != nil {
				// An answer of the wrong shape is the server's doing and
				// would most likely come back the same: not retried.
				return nil, &openaicompat.ProviderError{Service: service, Kind: domain.ErrUnavailable, What: err.Error(), Attempts: attempt + 1}
			}
			return vecs, nil
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case callCtx.Err() != nil:
			return nil, timeoutError(attempt+1, err, e.apiKey)
		}
		f := classify(err, httpRes, e.apiKey)
		if !f.retryable || attempt >= e.maxRetries {
			return nil, e.fail(ctx, f, attempt+1)
		}
		wait, ok := openaicompat.Backoff(callCtx, attempt, f.retryAfter, e.baseDelay, e.maxDelay)
		if !ok {
			return nil, e.fail(ctx, f, attempt+1)
		}
		timer := time.NewTimer(wait)
		select {
		case <-callCtx.Done():
			timer.Stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, timeoutError(attempt+1, err, e.apiKey)
		case <-timer.C:
		}
	}
}

// fail turns the last failure into the returned error and logs what an
// operator should see: a rejected configuration (the caller only sees
// ErrUnavailable, and nobody else can fix it) and refused input (a provider
// that refuses every request is misconfigured too, e.g. a Dimensions the
// model does not support). The log line carries the provider's own words,
// redacted.
func (e *Embedder) fail(ctx context.Context, f failure, attempts int) error {
	err := f.toError(attempts)
	switch {
	case f.operator:
		e.log.ErrorContext(ctx, "embedding provider rejected our configuration; check the API key, its permissions, the model name and the base URL",
			"host", e.host, "model", e.model, "error", err)
	case errors.Is(err, domain.ErrInvalidInput):
		e.log.WarnContext(ctx, "embedding provider refused a request; if it refuses every one, check the model and dimensions",
			"host", e.host, "model", e.model, "error", err)
	}
	return err
}

// decode checks an answer and returns its vectors in input order, each
// L2-normalised: exactly one per input, placed by its index (servers may
// answer out of order), all of dims values (any one size when dims is 0),
// finite as float32 and not all zero.
func decode(res *oai.CreateEmbeddingResponse, n, dims int) ([][]float32, error) {
	if len(res.Data) != n {
		return nil, fmt.Errorf("embedding provider answered %d vectors for %d texts", len(res.Data), n)
	}
	if dims == 0 && n > 0 {
		dims = len(res.Data[0].Embedding)
	}
	if dims == 0 {
		return nil, errors.New("embedding provider answered an empty vector")
	}
	backing := make([]float32, n*dims)
	out := make([][]float32, n)
	for _, d := range res.Data {
		i := d.Index
		if i < 0 || i >= int64(n) {
			return nil, fmt.Errorf("embedding provider answered index %d for %d texts", i, n)
		}
		if out[i] != nil {
			return nil, fmt.Errorf("embedding provider answered index %d twice", i)
		}
		if len(d.Embedding) != dims {
			return nil, fmt.Errorf("embedding provider answered a vector of %d dimensions, want %d", len(d.Embedding), dims)
		}
		v := backing[int(i)*dims : (int(i)+1)*dims : (int(i)+1)*dims]
		var sum float64
		for j, x := range d.Embedding {
			f := float32(x)
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, errors.New("embedding provider answered a vector with a value that is not a finite float32")
			}
			v[j] = f
			sum += float64(f) * float64(f)
		}
		if sum == 0 {
			return nil, errors.New("embedding provider answered a vector that cannot be normalised")
		}
		inv := 1 / math.Sqrt(sum)
		for j, x := range v {
			v[j] = float32(float64(x) * inv)
		}
		out[i] = v
	}
	return out, nil
}
