// Package config loads Concierge's settings from the environment into one
// typed, validated Config. It imports nothing of ours.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/mail"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is every setting, with defaults that fit a fresh development machine.
type Config struct {
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/concierge?sslmode=disable"`
	RedisURL    string `env:"REDIS_URL" envDefault:"redis://127.0.0.1:6379/0"`
	HTTPAddr    string `env:"HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	// PublicURL is how users reach the service, used in printed examples and links.
	PublicURL string `env:"PUBLIC_URL"`

	LogLevel  string `env:"LOG_LEVEL" envDefault:"info"`
	LogFormat string `env:"LOG_FORMAT" envDefault:"text"`

	DBMaxOpenConns int `env:"DB_MAX_OPEN_CONNS" envDefault:"20"`
	DBMaxIdleConns int `env:"DB_MAX_IDLE_CONNS" envDefault:"10"`

	BodyLimitBytes  int `env:"BODY_LIMIT_BYTES" envDefault:"1048576"`
	MaxMessageChars int `env:"MAX_MESSAGE_CHARS" envDefault:"8000"`
	// LargeBodySlots bounds the request bodies over BodyLimitBytes (file
	// uploads) one API process reads at once, and so the memory they take:
	// up to about 40 MiB of RSS each (a 20 MiB file and the GC's headroom);
	// 2 keep a flood of oversize uploads under 200 MiB (docs/benchmarks.md).
	// Another waits up to LargeBodyWait for a slot, then is refused with a
	// retryable 503.
	LargeBodySlots int           `env:"LARGE_BODY_SLOTS" envDefault:"2"`
	LargeBodyWait  time.Duration `env:"LARGE_BODY_WAIT" envDefault:"2s"`

	RateLimitAPIPerMinute     int `env:"RATE_LIMIT_API_PER_MINUTE" envDefault:"600"`
	RateLimitWebhookPerMinute int `env:"RATE_LIMIT_WEBHOOK_PER_MINUTE" envDefault:"1200"`
	RateLimitPublicPerMinute  int `env:"RATE_LIMIT_PUBLIC_PER_MINUTE" envDefault:"120"`
	// RateLimitWidgetSessionsPerMinute bounds the sessions one client IP
	// opens through the public widget endpoint, which needs no key.
	RateLimitWidgetSessionsPerMinute int `env:"RATE_LIMIT_WIDGET_SESSIONS_PER_MINUTE" envDefault:"30"`

	TrustedProxies []string `env:"TRUSTED_PROXIES" envSeparator:","`

	// AuthCacheTTL is how long a pod reuses a successful API-key check; it is
	// the longest a revocation or plan change made elsewhere takes to apply.
	AuthCacheTTL time.Duration `env:"AUTH_CACHE_TTL" envDefault:"5s"`

	ReadTimeout     time.Duration `env:"READ_TIMEOUT" envDefault:"30s"`
	IdleTimeout     time.Duration `env:"IDLE_TIMEOUT" envDefault:"120s"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"20s"`

	// LLMProvider is the deployment's default language model: "local" (the
	// embedded extractive model) or "openai" (any OpenAI-compatible server).
	LLMProvider      string        `env:"LLM_PROVIDER" envDefault:"local"`
	OpenAIBaseURL    string        `env:"OPENAI_BASE_URL" envDefault:"https://api.openai.com/v1"`
	OpenAIAPIKey     string        `env:"OPENAI_API_KEY"`
	OpenAIModel      string        `env:"OPENAI_MODEL" envDefault:"gpt-4o-mini"`
	OpenAITimeout    time.Duration `env:"OPENAI_TIMEOUT" envDefault:"60s"`
	OpenAIMaxRetries int           `env:"OPENAI_MAX_RETRIES" envDefault:"3"`
	// LLMTools says whether the OpenAI-compatible model is offered tools
	// (the agent's and the no_answer decline): "auto" offers them and, when
	// the server refuses them, asks again without; "off" never offers
	// them, for servers or models that take none. Without tools the model
	// declines by answering NO_ANSWER.
	LLMTools string `env:"LLM_TOOLS" envDefault:"auto"`

	// LLMPricesJSON is what each model's tokens cost, for the reports'
	// estimates: a JSON object of model name (as OPENAI_MODEL or an
	// agent's model names it) to {"prompt": 0.15, "completion": 0.6,
	// "currency": "USD"}, in units of the currency per million tokens. The
	// embedded model ("local") costs nothing unless listed. A model not
	// listed has no estimate.
	LLMPricesJSON string `env:"LLM_PRICES"`
	// LLMPrices is LLMPricesJSON parsed by Load.
	LLMPrices map[string]LLMPrice `env:"-"`

	// LocalTokenDelay slows the embedded model's stream, for demos and tests
	// of streaming; 0 streams as fast as it composes.
	LocalTokenDelay time.Duration `env:"LOCAL_TOKEN_DELAY" envDefault:"0s"`

	ChatTimeout     time.Duration `env:"CHAT_TIMEOUT" envDefault:"2m"`
	MaxAnswerChars  int           `env:"MAX_ANSWER_CHARS" envDefault:"4000"`
	RetrievalLimit  int           `env:"RETRIEVAL_LIMIT" envDefault:"5"`
	MaxToolRounds   int           `env:"MAX_TOOL_ROUNDS" envDefault:"3"`
	HistoryMessages int           `env:"HISTORY_MESSAGES" envDefault:"10"`

	WorkerConcurrency  int           `env:"WORKER_CONCURRENCY" envDefault:"10"`
	InboundSweepPeriod time.Duration `env:"INBOUND_SWEEP_PERIOD" envDefault:"30s"`

	// WorkerIndexConcurrency is how many index jobs (crawls, extraction,
	// embedding) one worker runs at once, in slots of their own: the
	// WorkerConcurrency slots of inbound messages and deliveries are never
	// taken by indexing.
	WorkerIndexConcurrency int `env:"WORKER_INDEX_CONCURRENCY" envDefault:"4"`

	// Embedder turns knowledge into vectors: "local" (embedded, no network)
	// or "openai" (any OpenAI-compatible embeddings endpoint, configured by
	// the OPENAI_* variables above plus the model and dimensions here).
	// Changing it re-embeds every source in the background.
	Embedder                  string `env:"EMBEDDER" envDefault:"local"`
	OpenAIEmbeddingModel      string `env:"OPENAI_EMBEDDING_MODEL" envDefault:"text-embedding-3-small"`
	OpenAIEmbeddingDimensions int    `env:"OPENAI_EMBEDDING_DIMENSIONS" envDefault:"0"`
	// LocalEmbeddingDimensions sizes the local embedder's vectors (64 to
	// 4096); smaller vectors take less memory and rank a little worse. It is
	// part of the embedder's id, so changing it re-embeds like changing the
	// embedder.
	LocalEmbeddingDimensions int `env:"LOCAL_EMBEDDING_DIMENSIONS" envDefault:"384"`
	// IndexQuestions is how many questions the OpenAI-compatible model
	// writes for each chunk at index time, the questions the chunk answers,
	// which retrieval then matches like the chunk's heading (0 to 10; 0, the
	// default, writes none). It costs one model call per chunk, once per
	// distinct text. Changing it, or the model, indexes every source again
	// in the background; questions already written by the same model for the
	// same text are reused.
	IndexQuestions int `env:"INDEX_QUESTIONS" envDefault:"0"`
	// IndexQuestionsModel names the model writing them, often a cheaper one
	// than OPENAI_MODEL, which is used when it is empty.
	IndexQuestionsModel string `env:"INDEX_QUESTIONS_MODEL"`
	// IndexQuestionsConcurrency is how many chunks of one index job are with
	// the model at once.
	IndexQuestionsConcurrency int `env:"INDEX_QUESTIONS_CONCURRENCY" envDefault:"4"`
	// AgentCacheTTL bounds how long a pod reuses an agent it read, when a
	// change announced over Redis was lost; 0 reads every time.
	AgentCacheTTL time.Duration `env:"AGENT_CACHE_TTL" envDefault:"5s"`
	// KeywordSearch picks retrieval's keyword leg: "memory" (BM25F in the
	// agent's in-memory index) or "postgres" (PostgreSQL full-text search,
	// one query per retrieval); the vector leg is in memory either way.
	KeywordSearch string `env:"KEYWORD_SEARCH" envDefault:"memory"`
	// IndexCacheBytes bounds the in-memory retrieval indexes of one API pod.
	IndexCacheBytes int64 `env:"INDEX_CACHE_BYTES" envDefault:"536870912"`
	// IndexSlotsPerWorkspace bounds one workspace's concurrent indexing jobs
	// across all workers.
	IndexSlotsPerWorkspace int `env:"INDEX_SLOTS_PER_WORKSPACE" envDefault:"2"`
	// CrawlUserAgent identifies the website crawler to the sites it reads.
	CrawlUserAgent string `env:"CRAWL_USER_AGENT"`
	// CrawlAllowPrivateAddresses lets the crawler read private and loopback
	// addresses. For tests against a local site only: it turns off the
	// protection against server-side request forgery.
	CrawlAllowPrivateAddresses bool `env:"CRAWL_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS" envDefault:"false"`
	// CrawlTimeBudget bounds the crawl time of one website indexing, summed
	// over its attempts; when it runs out, the pages read are indexed.
	CrawlTimeBudget time.Duration `env:"CRAWL_TIME_BUDGET" envDefault:"30m"`

	// DeliveryTimeout bounds one attempt to deliver a handoff or an event
	// to a workspace's receiver; a claimed delivery is held for twice as
	// long before another worker may try it.
	DeliveryTimeout time.Duration `env:"DELIVERY_TIMEOUT" envDefault:"15s"`
	// DeliveryRetryBase and DeliveryRetryCap shape the retry schedule: the
	// wait after attempt n is drawn from [c/2, c], c = min(base*2^(n-1),
	// cap). The defaults keep a delivery trying for 31 to 63 hours over its
	// 41 attempts; tests shorten them.
	DeliveryRetryBase time.Duration `env:"DELIVERY_RETRY_BASE" envDefault:"10s"`
	DeliveryRetryCap  time.Duration `env:"DELIVERY_RETRY_CAP" envDefault:"2h"`
	// DeliverySweepPeriod is how often workers look for deliveries whose
	// task was lost (overdue by twice the period) and enqueue them again.
	DeliverySweepPeriod time.Duration `env:"DELIVERY_SWEEP_PERIOD" envDefault:"30s"`
	// ReportSweepPeriod is how often workers decide due conversation
	// outcomes and roll up the reports: outcomes move at the pace of 24 h
	// and 7 day windows, and a late event shows in a report within one
	// period.
	ReportSweepPeriod time.Duration `env:"REPORT_SWEEP_PERIOD" envDefault:"1m"`
	// DeliveryAllowPrivateAddresses lets deliveries reach private and
	// loopback addresses and use http URLs. For tests against a local
	// receiver only: it turns off the protection against server-side
	// request forgery.
	DeliveryAllowPrivateAddresses bool `env:"DELIVERY_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS" envDefault:"false"`

	// RelayLogTTL and RelayLogMaxLen bound each session's log of recent
	// events in Redis, from which a live stream resumed with Last-Event-ID
	// replays answers still being generated; anything older is replayed
	// from PostgreSQL.
	RelayLogTTL    time.Duration `env:"RELAY_LOG_TTL" envDefault:"10m"`
	RelayLogMaxLen int           `env:"RELAY_LOG_MAX_LEN" envDefault:"2000"`
	// RelayBuffer is how many events a live stream may fall behind before
	// it catches up from the log instead, so a slow client never holds up
	// the others.
	RelayBuffer int `env:"RELAY_BUFFER" envDefault:"256"`
	// RelayOutageLimit is how long live streams stay open while Redis
	// cannot be reached; they catch up when it is back. Past it they end
	// with an UNAVAILABLE error event and their clients resume with
	// Last-Event-ID.
	RelayOutageLimit time.Duration `env:"RELAY_OUTAGE_LIMIT" envDefault:"30s"`

	// SMTPURL is the mail server for invitation and password reset links:
	// smtp://user:pass@host:587 (STARTTLS whenever the server offers it) or
	// smtps://user:pass@host:465 (TLS from the start). Unset, links are only
	// shown to whoever made them (the inviter, the operator's CLI).
	SMTPURL string `env:"SMTP_URL"`
	// MailFrom is the sender of that mail, such as
	// "Concierge <no-reply@example.com>"; required with SMTPURL.
	MailFrom string `env:"MAIL_FROM"`

	// MetricsAddr is where the process serves Prometheus metrics
	// (/metrics only), on a listener of its own: host:port, or "" or "off"
	// for none. Unset, serve and worker serve none and dev serves them on
	// DevMetricsAddr.
	MetricsAddr string `env:"METRICS_ADDR"`
	// OperatorWorkspace is the workspace of the people who run this
	// deployment: its owners, and only they, see the queue monitor at
	// /console/queues. Unset, nobody does.
	OperatorWorkspace string `env:"OPERATOR_WORKSPACE_ID"`
}

// DevMetricsAddr is where `concierge dev` serves metrics when
// CONCIERGE_METRICS_ADDR is unset.
const DevMetricsAddr = "127.0.0.1:9464"

// Prefix starts every variable name.
const Prefix = "CONCIERGE_"

// Load reads the configuration through getenv and validates it. Its errors are
// one line naming the variable and what to do.
func Load(getenv func(string) string) (Config, error) {
	var cfg Config
	err := env.ParseWithOptions(&cfg, env.Options{
		Prefix:      Prefix,
		Environment: environ(getenv),
	})
	if err != nil {
		return Config{}, explain(err)
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + strings.Replace(cfg.HTTPAddr, "0.0.0.0", "localhost", 1)
		if strings.HasPrefix(cfg.HTTPAddr, ":") {
			cfg.PublicURL = "http://localhost" + cfg.HTTPAddr
		}
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if strings.EqualFold(cfg.MetricsAddr, "off") {
		cfg.MetricsAddr = ""
	}
	if cfg.LLMPrices, err = parsePrices(cfg.LLMPricesJSON); err != nil {
		return Config{}, err
	}
	return cfg, cfg.validate()
}

// LLMPrice is one model's price, in millionths of Currency per million
// tokens (0.15 USD is 150000).
type LLMPrice struct {
	PromptMicrosPerMillion     int64
	CompletionMicrosPerMillion int64
	Currency                   string
}

// maxIndexQuestions is knowledge.MaxQuestionsPerChunk; config does not
// import the core.
const maxIndexQuestions = 10

// localModel is the embedded model's name (adapters/llm/local.ModelName),
// free unless the table says otherwise.
const localModel = "local"

// maxPricePerMillion bounds a price, to catch a price per token given as
// one per million (or a typo) before reports multiply it.
const maxPricePerMillion = 10_000

// parsePrices reads LLM_PRICES (see Config.LLMPricesJSON); every error
// names the variable and, when there is one, the model.
func parsePrices(raw string) (map[string]LLMPrice, error) {
	prices := map[string]LLMPrice{localModel: {Currency: "USD"}}
	if strings.TrimSpace(raw) == "" {
		return prices, nil
	}
	const example = `as {"gpt-4o-mini": {"prompt": 0.15, "completion": 0.6, "currency": "USD"}}`
	type entry struct {
		Prompt     *float64 `json:"prompt"`
		Completion *float64 `json:"completion"`
		Currency   string   `json:"currency"`
	}
	var entries map[string]entry
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil || dec.More() {
		return nil, fmt.Errorf("%sLLM_PRICES is not a JSON object of model to prices per million tokens, %s", Prefix, example)
	}
	for model, e := range entries {
		name := strings.TrimSpace(model)
		switch {
		case name == "" || name != model || len(name) > 100:
			return nil, fmt.Errorf("%sLLM_PRICES: model %q must be a name of 1 to 100 characters without surrounding spaces", Prefix, model)
		case e.Prompt == nil || e.Completion == nil:
			return nil, fmt.Errorf("%sLLM_PRICES: model %q needs both prompt and completion prices per million tokens, %s", Prefix, model, example)
		case !validPrice(*e.Prompt) || !validPrice(*e.Completion):
			return nil, fmt.Errorf("%sLLM_PRICES: model %q: prices must be between 0 and %d per million tokens", Prefix, model, maxPricePerMillion)
		case !isCurrencyCode(e.Currency):
			return nil, fmt.Errorf("%sLLM_PRICES: model %q: currency %q must be a three-letter code such as USD or EUR", Prefix, model, e.Currency)
		}
		prices[model] = LLMPrice{
			PromptMicrosPerMillion:     int64(math.Round(*e.Prompt * 1e6)),
			CompletionMicrosPerMillion: int64(math.Round(*e.Completion * 1e6)),
			Currency:                   e.Currency,
		}
	}
	return prices, nil
}

func validPrice(p float64) bool {
	return !math.IsNaN(p) && p >= 0 && p <= maxPricePerMillion
}

func isCurrencyCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// environ asks getenv for every variable Config knows, so tests can pass a map.
func environ(getenv func(string) string) map[string]string {
	out := map[string]string{}
	for _, name := range Names() {
		if v := getenv(name); v != "" {
			out[name] = v
		}
	}
	return out
}

// Names lists every variable Config reads.
func Names() []string {
	params, _ := env.GetFieldParamsWithOptions(&Config{}, env.Options{Prefix: Prefix})
	names := make([]string, 0, len(params))
	for _, p := range params {
		names = append(names, p.Key)
	}
	return names
}

// explain turns the env library's aggregate error into one actionable line.
func explain(err error) error {
	var agg env.AggregateError
	if errors.As(err, &agg) && len(agg.Errors) > 0 {
		var parse env.ParseError
		if errors.As(agg.Errors[0], &parse) {
			return fmt.Errorf("%s%s: cannot parse the value as %s; fix or unset it", Prefix, envName(parse.Name), parse.Type)
		}
		return fmt.Errorf("configuration: %v", agg.Errors[0])
	}
	return fmt.Errorf("configuration: %v", err)
}

func envName(field string) string {
	if f, ok := reflect.TypeFor[Config]().FieldByName(field); ok {
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		return name
	}
	return field
}

func (c Config) validate() error {
	if err := checkURL("DATABASE_URL", c.DatabaseURL, "postgres", "postgresql"); err != nil {
		return err
	}
	if err := checkURL("REDIS_URL", c.RedisURL, "redis", "rediss"); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return fmt.Errorf("%sHTTP_ADDR=%q is not host:port; use for example 127.0.0.1:8080 or :8080", Prefix, c.HTTPAddr)
	}
	if c.MetricsAddr != "" {
		host, port, err := net.SplitHostPort(c.MetricsAddr)
		if err != nil || port == "" {
			return fmt.Errorf("%sMETRICS_ADDR=%q is not host:port; use for example 127.0.0.1:9464 or :9464, or off for no metrics", Prefix, c.MetricsAddr)
		}
		if port != "0" && (c.MetricsAddr == c.HTTPAddr || (host == "" && strings.HasSuffix(c.HTTPAddr, ":"+port))) {
			return fmt.Errorf("%sMETRICS_ADDR=%q is the API's address; metrics need a listener of their own", Prefix, c.MetricsAddr)
		}
	}
	if c.OperatorWorkspace != "" && !isWorkspaceID(c.OperatorWorkspace) {
		return fmt.Errorf("%sOPERATOR_WORKSPACE_ID=%q is not a workspace id (ws_ and 26 letters or digits)", Prefix, c.OperatorWorkspace)
	}
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%sPUBLIC_URL=%q is not an http(s) URL; use for example https://chat.example.com", Prefix, c.PublicURL)
	}
	if _, err := c.LogLevelValue(); err != nil {
		return err
	}
	if c.SMTPURL != "" {
		if err := checkURL("SMTP_URL", c.SMTPURL, "smtp", "smtps"); err != nil {
			return err
		}
		if c.MailFrom == "" {
			return fmt.Errorf("%sMAIL_FROM is required with %sSMTP_URL; use for example \"Concierge <no-reply@example.com>\"", Prefix, Prefix)
		}
		if _, err := mail.ParseAddress(c.MailFrom); err != nil {
			return fmt.Errorf("%sMAIL_FROM=%q is not an email address; use for example \"Concierge <no-reply@example.com>\"", Prefix, c.MailFrom)
		}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("%sLOG_FORMAT=%q is not text or json", Prefix, c.LogFormat)
	}
	minimums := []struct {
		name  string
		value int
		min   int
		hint  string
	}{
		{"DB_MAX_OPEN_CONNS", c.DBMaxOpenConns, 1, ""},
		{"DB_MAX_IDLE_CONNS", c.DBMaxIdleConns, 0, ""},
		{"BODY_LIMIT_BYTES", c.BodyLimitBytes, 1024, ""},
		{"MAX_MESSAGE_CHARS", c.MaxMessageChars, 1, ""},
		{"LARGE_BODY_SLOTS", c.LargeBodySlots, 1, ""},
		{"RATE_LIMIT_API_PER_MINUTE", c.RateLimitAPIPerMinute, 0, " (0 disables the limit)"},
		{"RATE_LIMIT_WEBHOOK_PER_MINUTE", c.RateLimitWebhookPerMinute, 0, " (0 disables the limit)"},
		{"RATE_LIMIT_PUBLIC_PER_MINUTE", c.RateLimitPublicPerMinute, 0, " (0 disables the limit)"},
		{"RATE_LIMIT_WIDGET_SESSIONS_PER_MINUTE", c.RateLimitWidgetSessionsPerMinute, 0, " (0 disables the limit)"},
		{"WORKER_CONCURRENCY", c.WorkerConcurrency, 1, ""},
		{"WORKER_INDEX_CONCURRENCY", c.WorkerIndexConcurrency, 1, ""},
		{"OPENAI_MAX_RETRIES", c.OpenAIMaxRetries, 0, ""},
		{"MAX_ANSWER_CHARS", c.MaxAnswerChars, 100, ""},
		{"RETRIEVAL_LIMIT", c.RetrievalLimit, 1, ""},
		{"MAX_TOOL_ROUNDS", c.MaxToolRounds, 1, ""},
		{"HISTORY_MESSAGES", c.HistoryMessages, 0, ""},
		{"INDEX_SLOTS_PER_WORKSPACE", c.IndexSlotsPerWorkspace, 1, ""},
		{"OPENAI_EMBEDDING_DIMENSIONS", c.OpenAIEmbeddingDimensions, 0, " (0 takes the model's own size)"},
		{"LOCAL_EMBEDDING_DIMENSIONS", c.LocalEmbeddingDimensions, 64, ""},
		{"INDEX_QUESTIONS", c.IndexQuestions, 0, " (0 writes none)"},
		{"INDEX_QUESTIONS_CONCURRENCY", c.IndexQuestionsConcurrency, 1, ""},
	}
	for _, m := range minimums {
		if m.value < m.min {
			return fmt.Errorf("%s%s=%d is too small; it must be at least %d%s", Prefix, m.name, m.value, m.min, m.hint)
		}
	}
	durations := []struct {
		name  string
		value time.Duration
	}{
		{"READ_TIMEOUT", c.ReadTimeout}, {"IDLE_TIMEOUT", c.IdleTimeout},
		{"SHUTDOWN_TIMEOUT", c.ShutdownTimeout}, {"INBOUND_SWEEP_PERIOD", c.InboundSweepPeriod},
		{"DELIVERY_SWEEP_PERIOD", c.DeliverySweepPeriod}, {"REPORT_SWEEP_PERIOD", c.ReportSweepPeriod},
		{"OPENAI_TIMEOUT", c.OpenAITimeout}, {"CHAT_TIMEOUT", c.ChatTimeout},
	}
	for _, d := range durations {
		if d.value <= 0 {
			return fmt.Errorf("%s%s=%s must be a positive duration such as 30s", Prefix, d.name, d.value)
		}
	}
	switch c.LLMProvider {
	case "local":
	case "openai":
		if c.OpenAIAPIKey == "" && strings.Contains(c.OpenAIBaseURL, "api.openai.com") {
			return fmt.Errorf("%sOPENAI_API_KEY is required when %sLLM_PROVIDER=openai talks to api.openai.com; set it, or point %sOPENAI_BASE_URL at your own server", Prefix, Prefix, Prefix)
		}
	default:
		return fmt.Errorf("%sLLM_PROVIDER=%q is not local or openai", Prefix, c.LLMProvider)
	}
	if c.IndexQuestions > maxIndexQuestions {
		return fmt.Errorf("%sINDEX_QUESTIONS=%d is too many; write at most %d questions per chunk", Prefix, c.IndexQuestions, maxIndexQuestions)
	}
	if c.IndexQuestions > 0 && c.LLMProvider != "openai" && c.OpenAIAPIKey == "" {
		return fmt.Errorf("%sINDEX_QUESTIONS=%d needs an OpenAI-compatible model to write them: set %sLLM_PROVIDER=openai (and %sOPENAI_BASE_URL or %sOPENAI_API_KEY), or set %sINDEX_QUESTIONS=0",
			Prefix, c.IndexQuestions, Prefix, Prefix, Prefix, Prefix)
	}
	if c.IndexQuestionsModel != strings.TrimSpace(c.IndexQuestionsModel) || len(c.IndexQuestionsModel) > 200 {
		return fmt.Errorf("%sINDEX_QUESTIONS_MODEL=%q must be a model name without surrounding spaces", Prefix, c.IndexQuestionsModel)
	}
	if c.LLMTools != "auto" && c.LLMTools != "off" {
		return fmt.Errorf("%sLLM_TOOLS=%q is not auto or off", Prefix, c.LLMTools)
	}
	if u, err := url.Parse(c.OpenAIBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%sOPENAI_BASE_URL=%q is not an http(s) URL such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1", Prefix, c.OpenAIBaseURL)
	}
	switch c.Embedder {
	case "local":
	case "openai":
		if c.OpenAIAPIKey == "" && strings.Contains(c.OpenAIBaseURL, "api.openai.com") {
			return fmt.Errorf("%sOPENAI_API_KEY is required when %sEMBEDDER=openai talks to api.openai.com; set it, or point %sOPENAI_BASE_URL at your own server", Prefix, Prefix, Prefix)
		}
	default:
		return fmt.Errorf("%sEMBEDDER=%q is not local or openai", Prefix, c.Embedder)
	}
	if c.KeywordSearch != "memory" && c.KeywordSearch != "postgres" {
		return fmt.Errorf("%sKEYWORD_SEARCH=%q is not memory or postgres", Prefix, c.KeywordSearch)
	}
	if c.IndexCacheBytes < 0 {
		return fmt.Errorf("%sINDEX_CACHE_BYTES=%d must be 0 (no in-memory index) or more", Prefix, c.IndexCacheBytes)
	}
	if c.LocalTokenDelay < 0 || c.LocalTokenDelay > time.Second {
		return fmt.Errorf("%sLOCAL_TOKEN_DELAY=%s must be between 0s and 1s", Prefix, c.LocalTokenDelay)
	}
	if c.LargeBodyWait < 0 || c.LargeBodyWait > time.Minute {
		return fmt.Errorf("%sLARGE_BODY_WAIT=%s must be between 0 (refuse at once) and 1m", Prefix, c.LargeBodyWait)
	}
	if c.AgentCacheTTL < 0 || c.AgentCacheTTL > time.Minute {
		return fmt.Errorf("%sAGENT_CACHE_TTL=%s must be between 0 (no cache) and 1m", Prefix, c.AgentCacheTTL)
	}
	if c.DeliveryTimeout < time.Second || c.DeliveryTimeout > 25*time.Second {
		return fmt.Errorf("%sDELIVERY_TIMEOUT=%s must be between 1s and 25s (an attempt must finish within its task's 30s)", Prefix, c.DeliveryTimeout)
	}
	if c.DeliveryRetryBase < 10*time.Millisecond || c.DeliveryRetryBase > time.Hour {
		return fmt.Errorf("%sDELIVERY_RETRY_BASE=%s must be between 10ms and 1h", Prefix, c.DeliveryRetryBase)
	}
	if c.DeliveryRetryCap < c.DeliveryRetryBase || c.DeliveryRetryCap > 24*time.Hour {
		return fmt.Errorf("%sDELIVERY_RETRY_CAP=%s must be between %sDELIVERY_RETRY_BASE (%s) and 24h", Prefix, c.DeliveryRetryCap, Prefix, c.DeliveryRetryBase)
	}
	if c.CrawlTimeBudget < time.Second || c.CrawlTimeBudget > 24*time.Hour {
		return fmt.Errorf("%sCRAWL_TIME_BUDGET=%s must be between 1s and 24h", Prefix, c.CrawlTimeBudget)
	}
	if c.AuthCacheTTL < 0 || c.AuthCacheTTL > time.Minute {
		return fmt.Errorf("%sAUTH_CACHE_TTL=%s must be between 0 (no cache) and 1m", Prefix, c.AuthCacheTTL)
	}
	if c.RelayLogTTL < time.Minute || c.RelayLogTTL > 24*time.Hour {
		return fmt.Errorf("%sRELAY_LOG_TTL=%s must be between 1m and 24h", Prefix, c.RelayLogTTL)
	}
	if c.RelayLogMaxLen < 100 || c.RelayLogMaxLen > 1_000_000 {
		return fmt.Errorf("%sRELAY_LOG_MAX_LEN=%d must be between 100 and 1000000 (events per session)", Prefix, c.RelayLogMaxLen)
	}
	if c.RelayBuffer < 16 || c.RelayBuffer > 65536 {
		return fmt.Errorf("%sRELAY_BUFFER=%d must be between 16 and 65536 (events per live stream)", Prefix, c.RelayBuffer)
	}
	if c.RelayOutageLimit < time.Second || c.RelayOutageLimit > 10*time.Minute {
		return fmt.Errorf("%sRELAY_OUTAGE_LIMIT=%s must be between 1s and 10m", Prefix, c.RelayOutageLimit)
	}
	for _, p := range c.TrustedProxies {
		if net.ParseIP(p) == nil {
			if _, _, err := net.ParseCIDR(p); err != nil {
				return fmt.Errorf("%sTRUSTED_PROXIES: %q is not an IP address or CIDR range", Prefix, p)
			}
		}
	}
	return nil
}

// isWorkspaceID checks the form of a workspace id: ws_ and 26 lowercase
// letters or digits.
func isWorkspaceID(s string) bool {
	rest, ok := strings.CutPrefix(s, "ws_")
	if !ok || len(rest) != 26 {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func checkURL(name, raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s%s is not a valid URL (%s); use for example %s://127.0.0.1/...", Prefix, name, MaskURL(raw), schemes[0])
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return fmt.Errorf("%s%s must start with %s:// (got %s)", Prefix, name, schemes[0], MaskURL(raw))
}

// LogLevelValue parses LogLevel.
func (c Config) LogLevelValue() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return 0, fmt.Errorf("%sLOG_LEVEL=%q is not one of debug, info, warn, error", Prefix, c.LogLevel)
	}
	return l, nil
}

// MaskURL hides the password of a URL so it can be logged or printed.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	return u.Redacted()
}

// LogValue keeps secrets out of logs when the whole Config is logged.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("databaseUrl", MaskURL(c.DatabaseURL)),
		slog.String("redisUrl", MaskURL(c.RedisURL)),
		slog.String("httpAddr", c.HTTPAddr),
		slog.String("publicUrl", c.PublicURL),
		slog.String("logLevel", c.LogLevel),
		slog.Int("workerConcurrency", c.WorkerConcurrency),
		slog.Int("workerIndexConcurrency", c.WorkerIndexConcurrency),
		slog.Int("indexQuestions", c.IndexQuestions),
		slog.String("llmProvider", c.LLMProvider),
		slog.String("openaiBaseUrl", MaskURL(c.OpenAIBaseURL)),
		slog.Bool("openaiApiKeySet", c.OpenAIAPIKey != ""),
		slog.String("smtpUrl", MaskURL(c.SMTPURL)),
		slog.String("mailFrom", c.MailFrom),
		slog.String("metricsAddr", c.MetricsAddr),
		slog.String("operatorWorkspace", c.OperatorWorkspace),
	)
}
