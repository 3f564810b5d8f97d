package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // substring; "" means success
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults fit this machine", check: func(t *testing.T, c Config) {
			if c.HTTPAddr != "127.0.0.1:8080" || c.PublicURL != "http://127.0.0.1:8080" || c.MaxMessageChars != 8000 || c.BodyLimitBytes != 1<<20 {
				t.Fatalf("unexpected defaults: %+v", c)
			}
		}},
		{name: "listen on all interfaces gives a localhost public URL", env: map[string]string{"CONCIERGE_HTTP_ADDR": ":9090"}, check: func(t *testing.T, c Config) {
			if c.PublicURL != "http://localhost:9090" {
				t.Fatalf("PublicURL = %q", c.PublicURL)
			}
		}},
		{name: "trusted proxies split on commas", env: map[string]string{"CONCIERGE_TRUSTED_PROXIES": "10.0.0.1,10.1.0.0/16"}, check: func(t *testing.T, c Config) {
			if len(c.TrustedProxies) != 2 {
				t.Fatalf("TrustedProxies = %v", c.TrustedProxies)
			}
		}},
		{name: "metrics off by default", check: func(t *testing.T, c Config) {
			if c.MetricsAddr != "" || c.OperatorWorkspace != "" {
				t.Fatalf("metrics %q, operator workspace %q", c.MetricsAddr, c.OperatorWorkspace)
			}
		}},
		{name: "metrics address", env: map[string]string{"CONCIERGE_METRICS_ADDR": ":9464"}, check: func(t *testing.T, c Config) {
			if c.MetricsAddr != ":9464" {
				t.Fatalf("MetricsAddr = %q", c.MetricsAddr)
			}
		}},
		{name: "metrics off", env: map[string]string{"CONCIERGE_METRICS_ADDR": "off"}, check: func(t *testing.T, c Config) {
			if c.MetricsAddr != "" {
				t.Fatalf("MetricsAddr = %q", c.MetricsAddr)
			}
		}},
		{name: "metrics address without port", env: map[string]string{"CONCIERGE_METRICS_ADDR": "localhost"}, wantErr: `CONCIERGE_METRICS_ADDR="localhost" is not host:port`},
		{name: "metrics address with an empty port", env: map[string]string{"CONCIERGE_METRICS_ADDR": "127.0.0.1:"}, wantErr: `CONCIERGE_METRICS_ADDR="127.0.0.1:" is not host:port`},
		{name: "metrics on the API's address", env: map[string]string{"CONCIERGE_METRICS_ADDR": "127.0.0.1:8080"}, wantErr: "is the API's address"},
		{name: "metrics on the API's port, all interfaces", env: map[string]string{"CONCIERGE_HTTP_ADDR": ":9090", "CONCIERGE_METRICS_ADDR": ":9090"}, wantErr: "is the API's address"},
		{name: "operator workspace", env: map[string]string{"CONCIERGE_OPERATOR_WORKSPACE_ID": "ws_0000000000000000000000dev0"}, check: func(t *testing.T, c Config) {
			if c.OperatorWorkspace != "ws_0000000000000000000000dev0" {
				t.Fatalf("OperatorWorkspace = %q", c.OperatorWorkspace)
			}
		}},
		{name: "operator workspace not an id", env: map[string]string{"CONCIERGE_OPERATOR_WORKSPACE_ID": "acme"}, wantErr: `CONCIERGE_OPERATOR_WORKSPACE_ID="acme" is not a workspace id`},
		{name: "operator workspace with capitals", env: map[string]string{"CONCIERGE_OPERATOR_WORKSPACE_ID": "ws_0000000000000000000000DEV0"}, wantErr: "is not a workspace id"},
		{name: "unparseable number names the variable", env: map[string]string{"CONCIERGE_WORKER_CONCURRENCY": "many"}, wantErr: "CONCIERGE_WORKER_CONCURRENCY: cannot parse"},
		{name: "bad duration names the variable", env: map[string]string{"CONCIERGE_READ_TIMEOUT": "soon"}, wantErr: "CONCIERGE_READ_TIMEOUT"},
		{name: "database URL with wrong scheme", env: map[string]string{"CONCIERGE_DATABASE_URL": "mysql://root:pw@localhost/x"}, wantErr: "CONCIERGE_DATABASE_URL must start with postgres://"},
		{name: "database password is masked in errors", env: map[string]string{"CONCIERGE_DATABASE_URL": "mysql://root:hunter2@localhost/x"}, wantErr: "root:xxxxx@"},
		{name: "redis URL without host", env: map[string]string{"CONCIERGE_REDIS_URL": "redis://"}, wantErr: "CONCIERGE_REDIS_URL is not a valid URL"},
		{name: "HTTP address without port", env: map[string]string{"CONCIERGE_HTTP_ADDR": "localhost"}, wantErr: "CONCIERGE_HTTP_ADDR"},
		{name: "SMTP URL and sender", env: map[string]string{"CONCIERGE_SMTP_URL": "smtp://u:pw@mail.example.com:587", "CONCIERGE_MAIL_FROM": "Concierge <no-reply@example.com>"}, check: func(t *testing.T, c Config) {
			if c.SMTPURL != "smtp://u:pw@mail.example.com:587" || c.MailFrom != "Concierge <no-reply@example.com>" {
				t.Fatalf("SMTP %q, from %q", c.SMTPURL, c.MailFrom)
			}
		}},
		{name: "SMTP URL with wrong scheme, password masked", env: map[string]string{"CONCIERGE_SMTP_URL": "http://u:hunter2@mail.example.com", "CONCIERGE_MAIL_FROM": "a@example.com"}, wantErr: "CONCIERGE_SMTP_URL must start with smtp:// (got http://u:xxxxx@"},
		{name: "SMTP URL without sender", env: map[string]string{"CONCIERGE_SMTP_URL": "smtp://127.0.0.1:1025"}, wantErr: "CONCIERGE_MAIL_FROM is required"},
		{name: "sender not an address", env: map[string]string{"CONCIERGE_SMTP_URL": "smtp://127.0.0.1:1025", "CONCIERGE_MAIL_FROM": "concierge"}, wantErr: "CONCIERGE_MAIL_FROM=\"concierge\" is not an email address"},
		{name: "unknown log level", env: map[string]string{"CONCIERGE_LOG_LEVEL": "loud"}, wantErr: "CONCIERGE_LOG_LEVEL"},
		{name: "unknown log format", env: map[string]string{"CONCIERGE_LOG_FORMAT": "xml"}, wantErr: "CONCIERGE_LOG_FORMAT"},
		{name: "zero concurrency", env: map[string]string{"CONCIERGE_WORKER_CONCURRENCY": "0"}, wantErr: "CONCIERGE_WORKER_CONCURRENCY=0 is too small"},
		{name: "negative duration", env: map[string]string{"CONCIERGE_SHUTDOWN_TIMEOUT": "-1s"}, wantErr: "CONCIERGE_SHUTDOWN_TIMEOUT"},
		{name: "indexing defaults", check: func(t *testing.T, c Config) {
			if c.WorkerConcurrency != 10 || c.WorkerIndexConcurrency != 4 || c.CrawlTimeBudget != 30*time.Minute {
				t.Fatalf("worker %d, index %d, crawl budget %s", c.WorkerConcurrency, c.WorkerIndexConcurrency, c.CrawlTimeBudget)
			}
		}},
		{name: "indexing settings", env: map[string]string{"CONCIERGE_WORKER_INDEX_CONCURRENCY": "2", "CONCIERGE_CRAWL_TIME_BUDGET": "2h"}, check: func(t *testing.T, c Config) {
			if c.WorkerIndexConcurrency != 2 || c.CrawlTimeBudget != 2*time.Hour {
				t.Fatalf("index %d, crawl budget %s", c.WorkerIndexConcurrency, c.CrawlTimeBudget)
			}
		}},
		{name: "zero index concurrency", env: map[string]string{"CONCIERGE_WORKER_INDEX_CONCURRENCY": "0"}, wantErr: "CONCIERGE_WORKER_INDEX_CONCURRENCY=0 is too small"},
		{name: "crawl budget too short", env: map[string]string{"CONCIERGE_CRAWL_TIME_BUDGET": "500ms"}, wantErr: "CONCIERGE_CRAWL_TIME_BUDGET=500ms must be between 1s and 24h"},
		{name: "crawl budget too long", env: map[string]string{"CONCIERGE_CRAWL_TIME_BUDGET": "48h"}, wantErr: "CONCIERGE_CRAWL_TIME_BUDGET=48h0m0s must be between 1s and 24h"},
		{name: "crawl budget not a duration", env: map[string]string{"CONCIERGE_CRAWL_TIME_BUDGET": "forever"}, wantErr: "CONCIERGE_CRAWL_TIME_BUDGET"},
		{name: "bad trusted proxy", env: map[string]string{"CONCIERGE_TRUSTED_PROXIES": "lb.internal"}, wantErr: "CONCIERGE_TRUSTED_PROXIES"},
		{name: "unknown LLM provider", env: map[string]string{"CONCIERGE_LLM_PROVIDER": "gpt"}, wantErr: "CONCIERGE_LLM_PROVIDER"},
		{name: "LLM tools default to auto", check: func(t *testing.T, c Config) {
			if c.LLMTools != "auto" {
				t.Fatalf("LLM tools %q", c.LLMTools)
			}
		}},
		{name: "LLM tools off", env: map[string]string{"CONCIERGE_LLM_TOOLS": "off"}, check: func(t *testing.T, c Config) {
			if c.LLMTools != "off" {
				t.Fatalf("LLM tools %q", c.LLMTools)
			}
		}},
		{name: "index questions need an OpenAI-compatible model", env: map[string]string{"CONCIERGE_INDEX_QUESTIONS": "3"}, wantErr: "CONCIERGE_INDEX_QUESTIONS=3 needs an OpenAI-compatible model"},
		{name: "index questions with an OpenAI-compatible model", env: map[string]string{"CONCIERGE_INDEX_QUESTIONS": "3", "CONCIERGE_LLM_PROVIDER": "openai",
			"CONCIERGE_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "CONCIERGE_INDEX_QUESTIONS_MODEL": "small"}, check: func(t *testing.T, c Config) {
			if c.IndexQuestions != 3 || c.IndexQuestionsModel != "small" || c.IndexQuestionsConcurrency != 4 {
				t.Errorf("index questions = %d by %q, %d at once", c.IndexQuestions, c.IndexQuestionsModel, c.IndexQuestionsConcurrency)
			}
		}},
		{name: "too many index questions", env: map[string]string{"CONCIERGE_INDEX_QUESTIONS": "11", "CONCIERGE_OPENAI_API_KEY": "k"}, wantErr: "CONCIERGE_INDEX_QUESTIONS=11 is too many; write at most 10"},
		{name: "negative index questions", env: map[string]string{"CONCIERGE_INDEX_QUESTIONS": "-1"}, wantErr: "CONCIERGE_INDEX_QUESTIONS=-1 is too small"},
		{name: "index questions one at a time at least", env: map[string]string{"CONCIERGE_INDEX_QUESTIONS_CONCURRENCY": "0"}, wantErr: "CONCIERGE_INDEX_QUESTIONS_CONCURRENCY=0 is too small"},
		{name: "index questions model with spaces", env: map[string]string{"CONCIERGE_INDEX_QUESTIONS_MODEL": " small"}, wantErr: `CONCIERGE_INDEX_QUESTIONS_MODEL=" small" must be a model name`},
		{name: "unknown LLM tools mode", env: map[string]string{"CONCIERGE_LLM_TOOLS": "never"}, wantErr: `CONCIERGE_LLM_TOOLS="never" is not auto or off`},
		{name: "openai needs a key for api.openai.com", env: map[string]string{"CONCIERGE_LLM_PROVIDER": "openai"}, wantErr: "CONCIERGE_OPENAI_API_KEY"},
		{name: "openai-compatible server without key", env: map[string]string{"CONCIERGE_LLM_PROVIDER": "openai", "CONCIERGE_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, check: func(t *testing.T, c Config) {
			if c.LLMProvider != "openai" || c.OpenAIModel != "gpt-4o-mini" {
				t.Fatalf("config = %+v", c)
			}
		}},
		{name: "bad OpenAI base URL", env: map[string]string{"CONCIERGE_OPENAI_BASE_URL": "localhost:11434"}, wantErr: "CONCIERGE_OPENAI_BASE_URL"},
		{name: "public URL must be http", env: map[string]string{"CONCIERGE_PUBLIC_URL": "ftp://x"}, wantErr: "CONCIERGE_PUBLIC_URL"},
		{name: "delivery defaults", check: func(t *testing.T, c Config) {
			if c.DeliveryTimeout != 15*time.Second || c.DeliveryRetryBase != 10*time.Second || c.DeliveryRetryCap != 2*time.Hour ||
				c.DeliverySweepPeriod != 30*time.Second || c.DeliveryAllowPrivateAddresses {
				t.Fatalf("delivery defaults: %+v", c)
			}
		}},
		{name: "short delivery retries for tests", env: map[string]string{"CONCIERGE_DELIVERY_RETRY_BASE": "50ms", "CONCIERGE_DELIVERY_RETRY_CAP": "200ms"}, check: func(t *testing.T, c Config) {
			if c.DeliveryRetryBase != 50*time.Millisecond || c.DeliveryRetryCap != 200*time.Millisecond {
				t.Fatalf("retry %s..%s", c.DeliveryRetryBase, c.DeliveryRetryCap)
			}
		}},
		{name: "delivery timeout over the task's limit", env: map[string]string{"CONCIERGE_DELIVERY_TIMEOUT": "40s"}, wantErr: "CONCIERGE_DELIVERY_TIMEOUT=40s must be between 1s and 25s"},
		{name: "delivery retry cap below the base", env: map[string]string{"CONCIERGE_DELIVERY_RETRY_BASE": "1m", "CONCIERGE_DELIVERY_RETRY_CAP": "10s"}, wantErr: "CONCIERGE_DELIVERY_RETRY_CAP=10s must be between"},
		{name: "zero delivery retry base", env: map[string]string{"CONCIERGE_DELIVERY_RETRY_BASE": "0s"}, wantErr: "CONCIERGE_DELIVERY_RETRY_BASE"},
		{name: "zero delivery sweep period", env: map[string]string{"CONCIERGE_DELIVERY_SWEEP_PERIOD": "0s"}, wantErr: "CONCIERGE_DELIVERY_SWEEP_PERIOD"},
		{name: "relay defaults", check: func(t *testing.T, c Config) {
			if c.RelayLogTTL != 10*time.Minute || c.RelayLogMaxLen != 2000 || c.RelayBuffer != 256 {
				t.Fatalf("relay defaults: %s, %d, %d", c.RelayLogTTL, c.RelayLogMaxLen, c.RelayBuffer)
			}
		}},
		{name: "relay log kept for seconds", env: map[string]string{"CONCIERGE_RELAY_LOG_TTL": "30s"}, wantErr: "CONCIERGE_RELAY_LOG_TTL=30s must be between 1m and 24h"},
		{name: "relay log too short", env: map[string]string{"CONCIERGE_RELAY_LOG_MAX_LEN": "10"}, wantErr: "CONCIERGE_RELAY_LOG_MAX_LEN=10"},
		{name: "widget sessions limit default", check: func(t *testing.T, c Config) {
			if c.RateLimitWidgetSessionsPerMinute != 30 {
				t.Fatalf("RateLimitWidgetSessionsPerMinute = %d, want 30", c.RateLimitWidgetSessionsPerMinute)
			}
		}},
		{name: "widget sessions limit disabled", env: map[string]string{"CONCIERGE_RATE_LIMIT_WIDGET_SESSIONS_PER_MINUTE": "0"}, check: func(t *testing.T, c Config) {
			if c.RateLimitWidgetSessionsPerMinute != 0 {
				t.Fatalf("RateLimitWidgetSessionsPerMinute = %d, want 0", c.RateLimitWidgetSessionsPerMinute)
			}
		}},
		{name: "negative widget sessions limit", env: map[string]string{"CONCIERGE_RATE_LIMIT_WIDGET_SESSIONS_PER_MINUTE": "-1"}, wantErr: "CONCIERGE_RATE_LIMIT_WIDGET_SESSIONS_PER_MINUTE=-1"},
		{name: "relay buffer too small", env: map[string]string{"CONCIERGE_RELAY_BUFFER": "1"}, wantErr: "CONCIERGE_RELAY_BUFFER=1"},
		{name: "relay outage limit default", check: func(t *testing.T, c Config) {
			if c.RelayOutageLimit != 30*time.Second {
				t.Fatalf("RelayOutageLimit = %s, want 30s", c.RelayOutageLimit)
			}
		}},
		{name: "relay outage limit set", env: map[string]string{"CONCIERGE_RELAY_OUTAGE_LIMIT": "2m"}, check: func(t *testing.T, c Config) {
			if c.RelayOutageLimit != 2*time.Minute {
				t.Fatalf("RelayOutageLimit = %s, want 2m", c.RelayOutageLimit)
			}
		}},
		{name: "relay outage limit under a second", env: map[string]string{"CONCIERGE_RELAY_OUTAGE_LIMIT": "500ms"}, wantErr: "CONCIERGE_RELAY_OUTAGE_LIMIT=500ms must be between 1s and 10m"},
		{name: "relay outage limit over ten minutes", env: map[string]string{"CONCIERGE_RELAY_OUTAGE_LIMIT": "1h"}, wantErr: "CONCIERGE_RELAY_OUTAGE_LIMIT=1h0m0s must be between 1s and 10m"},
		{name: "relay outage limit not a duration", env: map[string]string{"CONCIERGE_RELAY_OUTAGE_LIMIT": "thirty"}, wantErr: "RELAY_OUTAGE_LIMIT"},
		{name: "large bodies read one at a time, refused at once", env: map[string]string{"CONCIERGE_LARGE_BODY_SLOTS": "1", "CONCIERGE_LARGE_BODY_WAIT": "0s"}, check: func(t *testing.T, c Config) {
			if c.LargeBodySlots != 1 || c.LargeBodyWait != 0 {
				t.Fatalf("large bodies: %d slots, wait %s", c.LargeBodySlots, c.LargeBodyWait)
			}
		}},
		{name: "no slot for large bodies", env: map[string]string{"CONCIERGE_LARGE_BODY_SLOTS": "0"}, wantErr: "CONCIERGE_LARGE_BODY_SLOTS=0 is too small"},
		{name: "large body wait too long", env: map[string]string{"CONCIERGE_LARGE_BODY_WAIT": "2m"}, wantErr: "CONCIERGE_LARGE_BODY_WAIT=2m0s must be between"},
		{name: "no prices: the embedded model is free", check: func(t *testing.T, c Config) {
			if len(c.LLMPrices) != 1 || c.LLMPrices["local"] != (LLMPrice{Currency: "USD"}) {
				t.Fatalf("LLMPrices = %+v", c.LLMPrices)
			}
		}},
		{name: "prices per million tokens in micros", env: map[string]string{"CONCIERGE_LLM_PRICES": `{"gpt-4o-mini": {"prompt": 0.15, "completion": 0.6, "currency": "USD"}, "local": {"prompt": 0, "completion": 0.001, "currency": "EUR"}}`}, check: func(t *testing.T, c Config) {
			want := map[string]LLMPrice{"gpt-4o-mini": {150000, 600000, "USD"}, "local": {0, 1000, "EUR"}}
			if len(c.LLMPrices) != 2 || c.LLMPrices["gpt-4o-mini"] != want["gpt-4o-mini"] || c.LLMPrices["local"] != want["local"] {
				t.Fatalf("LLMPrices = %+v, want %+v", c.LLMPrices, want)
			}
		}},
		{name: "prices not JSON", env: map[string]string{"CONCIERGE_LLM_PRICES": "gpt-4o-mini=0.15"}, wantErr: "CONCIERGE_LLM_PRICES is not a JSON object"},
		{name: "prices as a list", env: map[string]string{"CONCIERGE_LLM_PRICES": `[{"prompt": 1}]`}, wantErr: "CONCIERGE_LLM_PRICES is not a JSON object"},
		{name: "price with an unknown field", env: map[string]string{"CONCIERGE_LLM_PRICES": `{"m": {"prompt": 1, "completion": 1, "currency": "USD", "per": "token"}}`}, wantErr: "CONCIERGE_LLM_PRICES is not a JSON object"},
		{name: "price without completion", env: map[string]string{"CONCIERGE_LLM_PRICES": `{"m": {"prompt": 1, "currency": "USD"}}`}, wantErr: `CONCIERGE_LLM_PRICES: model "m" needs both prompt and completion`},
		{name: "negative price", env: map[string]string{"CONCIERGE_LLM_PRICES": `{"m": {"prompt": -1, "completion": 1, "currency": "USD"}}`}, wantErr: `CONCIERGE_LLM_PRICES: model "m": prices must be between 0 and 10000`},
		{name: "price per token, not per million", env: map[string]string{"CONCIERGE_LLM_PRICES": `{"m": {"prompt": 150000, "completion": 1, "currency": "USD"}}`}, wantErr: `prices must be between 0 and 10000`},
		{name: "price without currency", env: map[string]string{"CONCIERGE_LLM_PRICES": `{"m": {"prompt": 1, "completion": 1}}`}, wantErr: `CONCIERGE_LLM_PRICES: model "m": currency "" must be a three-letter code`},
		{name: "price in a lowercase currency", env: map[string]string{"CONCIERGE_LLM_PRICES": `{"m": {"prompt": 1, "completion": 1, "currency": "usd"}}`}, wantErr: `currency "usd" must be a three-letter code`},
		{name: "price of a blank model", env: map[string]string{"CONCIERGE_LLM_PRICES": `{" ": {"prompt": 1, "completion": 1, "currency": "USD"}}`}, wantErr: `CONCIERGE_LLM_PRICES: model " " must be a name`},
		{name: "negative large body wait", env: map[string]string{"CONCIERGE_LARGE_BODY_WAIT": "-1s"}, wantErr: "CONCIERGE_LARGE_BODY_WAIT=-1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error leaks a secret or spans lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestLogValueMasksPasswords(t *testing.T) {
	c := Config{DatabaseURL: "postgres://u:secret@h/db", RedisURL: "redis://:secret2@h:6379/0", OpenAIAPIKey: "sk-secret3", OpenAIBaseURL: "https://u:secret4@llm.example.com/v1",
		SMTPURL: "smtp://u:secret5@mail.example.com:587"}
	if s := c.LogValue().String(); strings.Contains(s, "secret") {
		t.Fatalf("LogValue leaks a password: %s", s)
	}
}
