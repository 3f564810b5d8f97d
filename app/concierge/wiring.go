package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/conciergehq/concierge/adapters/embedding/local"
	embedopenai "github.com/conciergehq/concierge/adapters/embedding/openai"
	"github.com/conciergehq/concierge/adapters/helpdesk/inbox"
	"github.com/conciergehq/concierge/adapters/helpdesk/webhook"
	httpapi "github.com/conciergehq/concierge/adapters/httpapi"
	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/adapters/httpapi/openapi"
	"github.com/conciergehq/concierge/adapters/ingest"
	"github.com/conciergehq/concierge/adapters/ingest/web"
	llmlocal "github.com/conciergehq/concierge/adapters/llm/local"
	"github.com/conciergehq/concierge/adapters/llm/openai"
	"github.com/conciergehq/concierge/adapters/mail/smtpmail"
	"github.com/conciergehq/concierge/adapters/metrics"
	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/queuemonitor"
	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/retrieval"
	"github.com/conciergehq/concierge/adapters/retrieval/synonyms"
	"github.com/conciergehq/concierge/adapters/tracing"
	"github.com/conciergehq/concierge/config"
	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/assignment"
	"github.com/conciergehq/concierge/core/availability"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/inbound"
	memberinbox "github.com/conciergehq/concierge/core/inbox"
	"github.com/conciergehq/concierge/core/knowledge"
	"github.com/conciergehq/concierge/core/outcome"
	"github.com/conciergehq/concierge/core/relay"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/core/savedreply"
	"github.com/conciergehq/concierge/core/unanswered"
	"github.com/conciergehq/concierge/core/widget"
	"github.com/conciergehq/concierge/core/workspace"
	"github.com/conciergehq/concierge/ports"
	"github.com/conciergehq/concierge/workers"
)

// system is every long-lived piece of one process, built explicitly.
type system struct {
	cfg      config.Config
	log      *slog.Logger
	db       *postgres.DB
	store    *postgres.Store
	redis    *goredis.Client
	redisOpt asynq.RedisConnOpt
	enqueuer *workers.Enqueuer
	clock    ports.Clock

	workspaces *workspace.Service
	// accounts is the people side (users, members, console sign-in),
	// which the console edge serves.
	accounts      *account.Service
	agents        *agent.Service
	conversations *conversation.Service
	inbound       *inbound.Service
	handoff       *handoff.Service
	assignments   *assignment.Service
	availability  *availability.Service
	deliveries    *delivery.Service
	widgets       *widget.Service
	feedback      *feedback.Service
	savedReplies  *savedreply.Service
	memberInbox   *memberinbox.Service
	// unanswered groups unanswered questions and answers their topics.
	unanswered *unanswered.Service
	// reports answers report requests (issue 18) from the rollups the
	// worker keeps (reportRollups).
	reports *report.Service
	chat    *chat.Service
	// lifecycle is the Conversation aggregate every capability goes through.
	lifecycle *conversation.Lifecycle
	// relay serves live streams; set by startRelay in serving processes.
	relay      *relay.Service
	changes    *redisadapter.Changes
	announcer  *announcer
	agentCache *agent.Cache
	retriever  *retrieval.Retriever
	indexer    *knowledge.Indexer
	embedder   ports.Embedder

	// traces is the process's tracing; nil when it is off.
	traces *tracing.Tracing
	// metrics is the process's Prometheus registry and observers; nil
	// without CONCIERGE_METRICS_ADDR. inspector reads the queues for it.
	metrics   *metrics.Metrics
	inspector *asynq.Inspector
	// monitor is the console's queue monitor; nil without an operator
	// workspace.
	monitor *queuemonitor.Monitor
}

// connect builds the system. Its errors are one line naming the variable to fix.
// traces is the process's tracing (e.tracing); nil when it is off, and then
// nothing is wrapped.
func connect(ctx context.Context, cfg config.Config, log *slog.Logger, traces *tracing.Tracing) (*system, error) {
	dbOpts := postgres.Options{MaxOpenConns: cfg.DBMaxOpenConns, MaxIdleConns: cfg.DBMaxIdleConns}
	if traces != nil {
		dbOpts.Tracer = traces.QueryTracer()
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, dbOpts)
	if err != nil {
		return nil, fmt.Errorf("%sDATABASE_URL: cannot use PostgreSQL at %s: %v; start PostgreSQL (make services) or point %sDATABASE_URL at a reachable database, and run `concierge migrate`",
			config.Prefix, config.MaskURL(cfg.DatabaseURL), rootCause(err), config.Prefix)
	}
	redisadapter.RouteLibraryLogs(log)
	rdb, err := redisadapter.Connect(ctx, cfg.RedisURL)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%sREDIS_URL: cannot use Redis at %s: %v; start Redis (make services) or point %sREDIS_URL at a reachable server",
			config.Prefix, config.MaskURL(cfg.RedisURL), rootCause(err), config.Prefix)
	}
	redisOpt, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		_ = rdb.Close()
		_ = db.Close()
		return nil, fmt.Errorf("%sREDIS_URL: %v", config.Prefix, err)
	}
	s := &system{cfg: cfg, log: log, traces: traces, db: db, store: postgres.NewStore(db.Gorm, db.Pool), redis: rdb, redisOpt: redisOpt, clock: domain.SystemClock{}}
	s.enqueuer = workers.NewEnqueuer(redisOpt)
	bus := redisadapter.NewEventBus(rdb).WithRetention(redisadapter.LogRetention{MaxLen: cfg.RelayLogMaxLen, TTL: cfg.RelayLogTTL})
	s.changes = redisadapter.NewChanges(rdb, log)
	if s.embedder, err = embedder(ctx, cfg); err != nil {
		s.close()
		return nil, err
	}
	syn, err := synonyms.Load()
	if err != nil {
		s.close()
		return nil, err
	}
	s.retriever = retrieval.New(s.store, s.embedder, retrieval.Options{Budget: cfg.IndexCacheBytes, KeywordFromPostgres: cfg.KeywordSearch == "postgres",
		Synonyms: syn}, log)
	s.observe()
	s.agentCache = agent.NewCache(s.store, cfg.AgentCacheTTL, s.clock)
	s.announcer = &announcer{remote: s.changes, local: s.forget}
	s.workspaces = workspace.NewService(s.store, s.store, s.clock, log, cfg.AuthCacheTTL, s.announcer)
	s.agents = agent.NewService(s.store, s.store, s.enqueuer, s.announcer, s.clock, log)
	if s.indexer, err = indexer(cfg, s, log); err != nil {
		s.close()
		return nil, err
	}
	// Every capability finds, opens, appends to, moves and publishes
	// conversations through this one lifecycle.
	s.lifecycle = conversation.New(conversation.Deps{
		Conversations: s.store, Workspaces: s.store, Agents: s.agentCache, Deliveries: s.enqueuer, Bus: bus,
		WorkspaceEvents: redisadapter.NewWorkspaceLog(rdb, redisadapter.DefaultWorkspaceLogRetention),
		AutoAssign:      s.enqueuer, Clock: s.clock, Log: log, Handoffs: s.handoffObserver(),
	})
	s.conversations = conversation.NewService(s.store, s.store, s.lifecycle)
	// Sign-in throttling counts exactly (no local batching): its budgets
	// are a handful of attempts a minute. Removing a member reports the
	// conversations it unassigns through the lifecycle, as assignments do.
	if s.accounts, err = accounts(cfg, s.store, redisadapter.NewRateLimiter(rdb), s.clock, s.lifecycle, log); err != nil {
		s.close()
		return nil, err
	}
	s.widgets = widget.NewService(widget.Deps{
		Workspaces: s.store, Agents: s.agentCache.Widgets(s.store), Lifecycle: s.lifecycle, Clock: s.clock,
	})
	s.savedReplies = savedreply.NewService(s.store, s.clock)
	s.unanswered = unanswered.NewService(s.store, s.agents, s.clock, log, unanswered.DefaultBatch)
	s.reports = report.NewService(s.store, s.agentCache, s.clock, priceTable(cfg.LLMPrices))
	s.feedback = feedback.NewService(feedback.Deps{
		Agents: s.agentCache, Lifecycle: s.lifecycle, Feedback: s.store, Clock: s.clock,
	})
	s.inbound = inbound.NewService(inbound.Deps{
		Workspaces: s.store, Conversations: s.store, Events: s.store, Queue: s.enqueuer,
		Lifecycle: s.lifecycle, Clock: s.clock, Log: log,
	}, cfg.MaxMessageChars)
	s.handoff = handoff.NewService(handoff.Deps{
		Conversations: s.store, Lifecycle: s.lifecycle, Clock: s.clock,
	}, cfg.MaxMessageChars)
	s.assignments = assignment.NewService(assignment.Deps{
		Assignments: s.store, Conversations: s.store, Lifecycle: s.lifecycle, Workspaces: s.store, Clock: s.clock,
	})
	s.memberInbox = memberinbox.NewService(memberinbox.Deps{Inbox: s.store, Agents: s.agentCache, Members: s.store})
	s.availability = availability.NewService(availability.Deps{Members: s.store, Workspaces: s.store, Conversations: s.store})
	if s.deliveries, err = deliveries(cfg, s, log); err != nil {
		s.close()
		return nil, err
	}
	models, err := languageModels(cfg, syn)
	if err != nil {
		s.close()
		return nil, err
	}
	var (
		retriever ports.Retriever    = s.retriever
		observer  ports.ChatObserver // nil: the engine observes nothing
	)
	if s.metrics != nil {
		models = observedModels(cfg, s.metrics, models)
		retriever, observer = s.metrics.Retriever(s.retriever), s.metrics
	}
	var tracer ports.Tracer // nil: the engine marks no steps
	if traces != nil {
		models = tracedModels(cfg, traces, models)
		retriever, tracer = traces.Retriever(retriever), traces
	}
	s.chat, err = chat.NewService(chat.Deps{
		Workspaces: s.store, Agents: s.agentCache, Conversations: s.store, Retriever: retriever,
		Models: models, DefaultModel: cfg.LLMProvider, Lifecycle: s.lifecycle,
		Keyed: s.store, Interrupted: s.store, Recent: redisadapter.NewEventLog(rdb), Clock: s.clock, Log: log,
		Observer: observer, Tracer: tracer,
	}, chat.Limits{
		MaxMessageChars: cfg.MaxMessageChars, MaxAnswerChars: cfg.MaxAnswerChars, RetrievalLimit: cfg.RetrievalLimit,
		HistoryMessages: cfg.HistoryMessages, MaxToolRounds: cfg.MaxToolRounds, Timeout: cfg.ChatTimeout,
	})
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// accounts builds the account use cases, with the SMTP mailer when
// CONCIERGE_SMTP_URL is set (without it, links are shown, not emailed).
func accounts(cfg config.Config, store *postgres.Store, limiter ports.RateLimiter, clock ports.Clock, assignees account.Assignees, log *slog.Logger) (*account.Service, error) {
	deps := account.Deps{
		Users: store, Members: store, Sessions: store, Invitations: store, Resets: store, Sweep: store,
		Limiter: limiter, Clock: clock, Assignees: assignees, Log: log.With("component", "accounts"),
	}
	if cfg.SMTPURL != "" {
		m, err := smtpmail.New(smtpmail.Options{URL: cfg.SMTPURL, From: cfg.MailFrom})
		if err != nil {
			return nil, fmt.Errorf("%sSMTP_URL: %v", config.Prefix, err)
		}
		deps.Mailer = m
	}
	svc, err := account.NewService(deps, account.Options{BaseURL: cfg.PublicURL})
	if err != nil {
		return nil, fmt.Errorf("%sPUBLIC_URL: %v", config.Prefix, err)
	}
	return svc, nil
}

// deliveries builds the delivery use cases: signed webhooks to helpdesk and
// events URLs, the built-in inbox, and the retry schedule.
func deliveries(cfg config.Config, s *system, log *slog.Logger) (*delivery.Service, error) {
	sender, err := webhook.New(webhook.Options{
		Timeout: cfg.DeliveryTimeout,
		// Test-only: see config.Config.DeliveryAllowPrivateAddresses.
		AllowPrivateAddresses: cfg.DeliveryAllowPrivateAddresses,
	})
	if err != nil {
		return nil, fmt.Errorf("%sDELIVERY_TIMEOUT: %v", config.Prefix, err)
	}
	svc, err := delivery.NewService(delivery.Deps{
		Workspaces: s.store, Attempts: s.store, Deliveries: s.store, Integrations: s.store, Queue: s.enqueuer,
		Webhook: sender, Inbox: inbox.New(), URLs: sender, Changes: s.announcer, Clock: s.clock, Log: log,
	}, delivery.Options{
		Backoff: delivery.Backoff{Base: cfg.DeliveryRetryBase, Cap: cfg.DeliveryRetryCap},
		// An attempt takes at most the timeout (plus recording); holding a
		// claimed delivery twice as long keeps a slow attempt from being
		// doubled, while a killed worker's delivery comes back soon.
		Lease:      2 * cfg.DeliveryTimeout,
		StaleAfter: 2 * cfg.DeliverySweepPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("%sDELIVERY_*: %v", config.Prefix, err)
	}
	return svc, nil
}

// embedder builds the configured embedder. The openai one asks its server
// for the model's size when none is configured, so a wrong model fails here.
func embedder(ctx context.Context, cfg config.Config) (ports.Embedder, error) {
	if cfg.Embedder == "openai" {
		e, err := embedopenai.New(ctx, embedopenai.Options{
			BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Model: cfg.OpenAIEmbeddingModel,
			Dimensions: cfg.OpenAIEmbeddingDimensions, Timeout: cfg.OpenAITimeout, MaxRetries: cfg.OpenAIMaxRetries,
		})
		if err != nil {
			return nil, fmt.Errorf("%sEMBEDDER=openai: %v", config.Prefix, err)
		}
		return e, nil
	}
	e, err := local.New(local.Options{Dimensions: cfg.LocalEmbeddingDimensions})
	if err != nil {
		return nil, fmt.Errorf("%sLOCAL_EMBEDDING_DIMENSIONS: %v", config.Prefix, err)
	}
	return e, nil
}

// indexer builds the knowledge pipeline: extraction, chunking, fetching,
// embedding.
func indexer(cfg config.Config, s *system, log *slog.Logger) (*knowledge.Indexer, error) {
	chunker, err := ingest.NewChunker(ingest.ChunkerOptions{})
	if err != nil {
		return nil, err
	}
	fetcher, err := web.New(web.Options{
		UserAgent: cfg.CrawlUserAgent,
		Extract:   ingest.HTMLDocument,
		// Test-only: see config.Config.CrawlAllowPrivateAddresses.
		AllowPrivateAddresses: cfg.CrawlAllowPrivateAddresses,
		Logger:                log.With("component", "crawler"),
	})
	if err != nil {
		return nil, fmt.Errorf("%sCRAWL_*: %v", config.Prefix, err)
	}
	questions, err := questionWriter(cfg, s)
	if err != nil {
		return nil, err
	}
	return knowledge.NewIndexer(knowledge.Deps{
		Store: s.store, Crawls: s.store, Extractor: ingest.NewExtractor(ingest.ExtractorOptions{}), Chunker: chunker, Web: fetcher,
		Embedder: s.embedder, Questions: questions, Notifier: s.announcer, Clock: s.clock, Log: log.With("component", "indexer"),
	}, knowledge.Options{CrawlBudget: cfg.CrawlTimeBudget, QuestionsPerChunk: cfg.IndexQuestions,
		QuestionConcurrency: cfg.IndexQuestionsConcurrency}), nil
}

// questionWriter is the OpenAI-compatible model writing each chunk's
// questions at index time, counted and traced like the answering models
// under its own model name; nil unless CONCIERGE_INDEX_QUESTIONS asks for
// questions (config checked that such a model is configured).
func questionWriter(cfg config.Config, s *system) (*knowledge.QuestionWriter, error) {
	if cfg.IndexQuestions == 0 {
		return nil, nil
	}
	model := cfg.IndexQuestionsModel
	if model == "" {
		model = cfg.OpenAIModel
	}
	m, err := openai.New(openAIOptions(cfg, model))
	if err != nil {
		return nil, fmt.Errorf("%sINDEX_QUESTIONS: %v", config.Prefix, err)
	}
	var llm ports.LLM = m
	if s.metrics != nil {
		llm = s.metrics.LLM("openai", model, nil, llm)
	}
	if s.traces != nil {
		llm = s.traces.LLM("openai", model, llm)
	}
	return knowledge.NewQuestionWriter(llm, model), nil
}

// listenForChanges keeps this pod's caches in step with other pods' agent
// and knowledge changes until ctx ends.
func (s *system) listenForChanges(ctx context.Context) {
	go func() {
		_ = s.changes.Listen(ctx, nil, s.forget, func() {
			// Announcements may have been lost while disconnected. Agents
			// and API-key checks are read again; indexes are compared with
			// the agents' knowledge versions on their next use anyway.
			s.agentCache.Clear()
			s.workspaces.ForgetAll()
		})
	}()
}

// forget drops this pod's cached copies of an agent and, when its knowledge
// changed, of its index; without an agent, of the workspace's settings.
func (s *system) forget(workspaceID, agentID string, knowledgeVersion int64) {
	if agentID == "" {
		s.workspaces.Forget(workspaceID)
		return
	}
	s.agentCache.Invalidate(workspaceID, agentID)
	s.retriever.Invalidate(agentID, knowledgeVersion)
}

// announcer applies a change to this pod's caches before announcing it to
// the others, so a request that follows a change on the same pod never sees
// the old agent, whatever Redis' delivery delay.
type announcer struct {
	remote interface {
		ports.KnowledgeNotifier
		ports.WorkspaceNotifier
	}
	local func(workspaceID, agentID string, knowledgeVersion int64)
}

func (a *announcer) KnowledgeChanged(ctx context.Context, change ports.KnowledgeChange) error {
	a.local(change.WorkspaceID, change.AgentID, change.Version)
	return a.remote.KnowledgeChanged(ctx, change)
}

func (a *announcer) WorkspaceChanged(ctx context.Context, workspaceID string) error {
	a.local(workspaceID, "", 0)
	return a.remote.WorkspaceChanged(ctx, workspaceID)
}

func (a *announcer) AgentChanged(ctx context.Context, workspaceID, agentID string) error {
	a.local(workspaceID, agentID, 0)
	return a.remote.AgentChanged(ctx, workspaceID, agentID)
}

// languageModels builds every configured model adapter: the embedded one
// always (agents may pick it), sharing the retriever's synonyms, and the
// OpenAI-compatible one when it is the default or has credentials.
func languageModels(cfg config.Config, syn *synonyms.Table) (map[string]ports.LLM, error) {
	models := map[string]ports.LLM{"local": llmlocal.New(llmlocal.Options{TokenDelay: cfg.LocalTokenDelay, Related: syn.Of, Known: syn.Knows})}
	if cfg.LLMProvider == "openai" || cfg.OpenAIAPIKey != "" {
		m, err := openai.New(openAIOptions(cfg, cfg.OpenAIModel))
		if err != nil {
			return nil, fmt.Errorf("%sOPENAI_*: %v", config.Prefix, err)
		}
		models["openai"] = m
	}
	return models, nil
}

// openAIOptions are the OpenAI-compatible server's settings, asking model.
func openAIOptions(cfg config.Config, model string) openai.Options {
	return openai.Options{
		BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Model: model,
		Timeout: cfg.OpenAITimeout, MaxRetries: cfg.OpenAIMaxRetries, Tools: cfg.LLMTools,
	}
}

// observedModels wraps every model adapter so its calls are counted: the
// embedded one as model "local", the OpenAI-compatible one under its
// configured model (an agent's other choice counts as "other").
func observedModels(cfg config.Config, m *metrics.Metrics, models map[string]ports.LLM) map[string]ports.LLM {
	out := make(map[string]ports.LLM, len(models))
	for provider, llm := range models {
		out[provider] = m.LLM(provider, modelName(cfg, provider), nil, llm)
	}
	return out
}

// modelName is the model a provider's adapter asks for by default: the
// embedded one is "local", the OpenAI-compatible one its configured model.
func modelName(cfg config.Config, provider string) string {
	if provider == "openai" {
		return cfg.OpenAIModel
	}
	return provider
}

// tracedModels wraps every model adapter in a span per turn, named as
// observedModels names them.
func tracedModels(cfg config.Config, t *tracing.Tracing, models map[string]ports.LLM) map[string]ports.LLM {
	out := make(map[string]ports.LLM, len(models))
	for provider, llm := range models {
		out[provider] = t.LLM(provider, modelName(cfg, provider), llm)
	}
	return out
}

// handoffObserver is the metrics' handoff counter, or nil without metrics
// (never a nil pointer in an interface).
func (s *system) handoffObserver() ports.HandoffObserver {
	if s.metrics == nil {
		return nil
	}
	return s.metrics
}

// webhookInbox is what the webhook edge calls to receive events.
type webhookInbox = metrics.InboundReceiver

// rootCause keeps the innermost error's text, which is the actionable part
// ("connection refused", "database \"x\" does not exist").
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		if multi, ok := next.(interface{ Unwrap() []error }); ok {
			errs := multi.Unwrap()
			next = errs[len(errs)-1]
		}
		err = next
	}
}

func (s *system) close() {
	if s.monitor != nil {
		if err := s.monitor.Close(); err != nil {
			s.log.Warn("closing the queue monitor", "error", err)
		}
	}
	if s.inspector != nil {
		if err := s.inspector.Close(); err != nil {
			s.log.Warn("closing the queue inspector", "error", err)
		}
	}
	if err := s.enqueuer.Close(); err != nil {
		s.log.Warn("closing the queue client", "error", err)
	}
	if err := s.redis.Close(); err != nil {
		s.log.Warn("closing Redis", "error", err)
	}
	if err := s.db.Close(); err != nil {
		s.log.Warn("closing PostgreSQL", "error", err)
	}
	if s.traces != nil {
		// The spans still buffered are sent now, or given up after a while:
		// a collector that is down must not hold the process's exit.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.traces.Shutdown(ctx); err != nil {
			s.log.Warn("sending the last spans", "error", err)
		}
	}
}

// httpApp builds the API's fiber app.
func (s *system) httpApp(ctx context.Context) (*fiber.App, error) {
	doc, err := openapi.Document()
	if err != nil {
		return nil, fmt.Errorf("loading the embedded OpenAPI document: %w", err)
	}
	monitor, err := s.queueMonitor()
	if err != nil {
		return nil, fmt.Errorf("building the queue monitor: %w", err)
	}
	con, err := console.New(s.accounts, s.workspaces, s.agents,
		console.Options{PublicURL: s.cfg.PublicURL, Log: s.log.With("component", "console"), Deliveries: s.deliveries,
			Conversations: s.conversations, Chat: console.ChatEngine(s.chat), Reveals: redisadapter.NewOneTimeStore(s.redis),
			Events: consoleEvents{s.relay},
			Inbox:  s.memberInbox, Ownership: s.assignments, Composer: s.handoff, SavedReplies: s.savedReplies,
			Availability: s.availability, Suggestions: s.chat, Unanswered: s.unanswered, Reports: s.reports,
			Queues: monitor, OperatorWorkspace: s.cfg.OperatorWorkspace})
	if err != nil {
		return nil, fmt.Errorf("building the console: %w", err)
	}
	var (
		inbox    webhookInbox = s.inbound
		requests httpapi.RequestObserver
	)
	if s.metrics != nil {
		inbox, requests = s.metrics.Inbound(s.inbound), s.metrics
	}
	app, err := httpapi.New(ctx,
		httpapi.Services{Workspaces: s.workspaces, Agents: s.agents, Conversations: s.conversations, Inbound: inbox, Chat: s.chat, Handoff: s.handoff, Assignments: s.assignments,
			Deliveries: s.deliveries, Relay: s.relay, Widgets: s.widgets, Feedback: s.feedback,
			SavedReplies: s.savedReplies, Availability: s.availability, Unanswered: s.unanswered, Reports: s.reports, Console: con},
		httpapi.Deps{
			RateLimiter: redisadapter.NewBatchingRateLimiter(redisadapter.NewRateLimiter(s.redis)),
			Clock:       s.clock,
			Health:      s.healthChecks(),
			OpenAPI:     doc,
			Log:         s.log,
			Requests:    requests,
			Traces:      s.tracerProvider(),
		},
		httpapi.Options{
			BodyLimitBytes:                   s.cfg.BodyLimitBytes,
			LargeBodySlots:                   s.cfg.LargeBodySlots,
			LargeBodyWait:                    s.cfg.LargeBodyWait,
			RateLimitAPIPerMinute:            s.cfg.RateLimitAPIPerMinute,
			RateLimitHookPerMinute:           s.cfg.RateLimitWebhookPerMinute,
			RateLimitPublicPerMinute:         s.cfg.RateLimitPublicPerMinute,
			RateLimitWidgetSessionsPerMinute: s.cfg.RateLimitWidgetSessionsPerMinute,
			PublicURL:                        s.cfg.PublicURL,
			TrustedProxies:                   s.cfg.TrustedProxies,
			ReadTimeout:                      s.cfg.ReadTimeout,
			IdleTimeout:                      s.cfg.IdleTimeout,
		})
	if err != nil {
		return nil, fmt.Errorf("loading the embedded widget: %w", err)
	}
	return app, nil
}

// tracerProvider is what the HTTP and queue edges start spans with; nil
// when tracing is off (never a nil pointer in an interface).
func (s *system) tracerProvider() trace.TracerProvider {
	if s.traces == nil {
		return nil
	}
	return s.traces.Provider()
}

// workerServer builds the asynq server and the sweepers of inbound events,
// index jobs and deliveries, and the job deciding conversation outcomes.
func (s *system) workerServer() (*workers.Server, []*workers.Sweeper) {
	var (
		inbound   workers.InboundProcessor  = s.inbound
		delivered workers.DeliveryProcessor = s.deliveries
	)
	if s.metrics != nil {
		inbound, delivered = s.metrics.InboundProcessor(s.inbound), s.metrics.Deliveries(s.deliveries)
	}
	srv := workers.NewServer(s.redisOpt,
		workers.ServerConfig{Concurrency: s.cfg.WorkerConcurrency, IndexConcurrency: s.cfg.WorkerIndexConcurrency,
			ShutdownTimeout: s.cfg.ShutdownTimeout, IndexSlotsPerWorkspace: s.cfg.IndexSlotsPerWorkspace,
			Traces: s.tracerProvider()},
		workers.Processors{Inbound: inbound, Knowledge: s.indexer, Slots: redisadapter.NewSlots(s.redis), Delivery: delivered,
			AutoAssign: s.assignments}, s.log)
	sweepers := []*workers.Sweeper{
		workers.NewSweeper("inbound events", s.inbound, s.cfg.InboundSweepPeriod, s.log),
		workers.NewSweeper("index jobs", knowledge.NewRequeuer(s.store, s.enqueuer, s.embedder.ID(), s.indexer.QuestionsBy(), s.clock), s.cfg.InboundSweepPeriod, s.log),
		workers.NewSweeper("deliveries", s.deliveries, s.cfg.DeliverySweepPeriod, s.log),
		workers.NewSweeper("interrupted answers", interruptedAnswers{s.chat}, s.cfg.InboundSweepPeriod, s.log),
		workers.NewSweeper("ended console sessions and old links", endedAccounts{s.accounts}, accountSweepPeriod, s.log),
		workers.NewSweeper("conversation outcomes and report rollups", decidedOutcomes{
			outcomes: outcome.NewService(s.store, s.clock, outcome.DefaultBatch),
			rollups:  report.NewRollup(s.store, s.clock, report.DefaultRollupBatch),
		}, s.cfg.ReportSweepPeriod, s.log),
		workers.NewSweeper("unanswered questions", groupedQuestions{s.unanswered}, s.cfg.InboundSweepPeriod, s.log),
	}
	return srv, sweepers
}

// decidedOutcomes runs the decision of due conversation outcomes
// (outcome.Service.Sweep) and then the report rollups (report.Rollup.Sweep)
// as one sweep, in that order, so the rollups carry the outcomes just
// decided; the count it reports is conversations decided plus rolled up,
// not tasks requeued.
type decidedOutcomes struct {
	outcomes *outcome.Service
	rollups  *report.Rollup
}

func (d decidedOutcomes) RequeueStale(ctx context.Context) (int, error) {
	decided, err := d.outcomes.Sweep(ctx)
	if err != nil {
		return decided, err
	}
	rolled, err := d.rollups.Sweep(ctx)
	return decided + rolled, err
}

// priceTable is the configured model prices (CONCIERGE_LLM_PRICES) as the
// reports price tokens.
func priceTable(prices map[string]config.LLMPrice) domain.PriceTable {
	out := make(domain.PriceTable, len(prices))
	for model, p := range prices {
		out[model] = domain.ModelPrice{PromptMicrosPerMillion: p.PromptMicrosPerMillion,
			CompletionMicrosPerMillion: p.CompletionMicrosPerMillion, Currency: p.Currency}
	}
	return out
}

// groupedQuestions runs the grouping of unanswered questions into topics
// (unanswered.Service.Sweep) as a sweep, at the inbound sweep's period: a
// question shows in its topic within seconds. The count it reports is
// questions grouped, not tasks requeued.
type groupedQuestions struct{ unanswered *unanswered.Service }

func (g groupedQuestions) RequeueStale(ctx context.Context) (int, error) {
	return g.unanswered.Sweep(ctx)
}

// accountSweepPeriod is how often ended console sessions and old links are
// deleted: they are refused when presented anyway, so the sweep only keeps
// the tables small and need not run often.
const accountSweepPeriod = 10 * time.Minute

// endedAccounts runs the deletion of ended console sessions and old links
// (account.Service.SweepEnded) as a sweep; the count it reports is rows
// deleted, not tasks requeued.
type endedAccounts struct{ accounts *account.Service }

func (e endedAccounts) RequeueStale(ctx context.Context) (int, error) {
	return e.accounts.SweepEnded(ctx)
}

// interruptedAnswers runs the answer engine's close of answers whose process
// died (chat.Service.CloseInterrupted) as a sweep.
type interruptedAnswers struct{ chat *chat.Service }

func (i interruptedAnswers) RequeueStale(ctx context.Context) (int, error) {
	return i.chat.CloseInterrupted(ctx)
}
