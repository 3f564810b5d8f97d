package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/trace"

	"github.com/conciergehq/concierge/core/domain"
)

// InboundProcessor processes a stored inbound webhook event. core/inbound
// satisfies it; it must be idempotent, because a task can run more than once.
type InboundProcessor interface {
	// ProcessInboundEvent appends the event's message and publishes it. Errors
	// carry domain kinds: permanent kinds (for example domain.ErrNotFound when
	// the event no longer exists) stop retries, anything else is retried.
	ProcessInboundEvent(ctx context.Context, eventID string) error
}

// Server defaults, used when a ServerConfig field is zero.
const (
	// DefaultConcurrency suits handlers that mostly wait on Postgres and Redis.
	DefaultConcurrency = 10
	// DefaultIndexConcurrency is the index jobs one worker runs at once: a
	// crawl mostly waits on its site, embedding on its provider or the CPU.
	// With the default two slots per workspace, two workspaces index at
	// once on each worker.
	DefaultIndexConcurrency = 4
	// DefaultShutdownTimeout lets in-flight tasks finish within Kubernetes'
	// default 30 s termination grace period.
	DefaultShutdownTimeout = 25 * time.Second
	// DefaultTaskCheckInterval is how long an idle server sleeps between queue
	// polls. asynq's 1 s default put 0.5 s p50 between enqueue and handler
	// start here; 10 ms gave 5 ms p50, for one cheap Redis call per poll.
	DefaultTaskCheckInterval = 10 * time.Millisecond
)

// delayedTaskCheckInterval is how often retries that are due move back to
// their queue. asynq's 5 s default would stretch a first 1 s retry of a
// message someone waits on to as much as 6 s.
const delayedTaskCheckInterval = time.Second

// indexTaskCheckInterval is the idle poll of the knowledge queue: nobody
// waits on an index job's first second, so it need not cost a Redis call
// every 10 ms.
const indexTaskCheckInterval = 100 * time.Millisecond

// ServerConfig tunes the worker server; zero fields take the defaults above.
type ServerConfig struct {
	// Traces continues the trace each task carries (adapters/tracing);
	// nil traces nothing.
	Traces trace.TracerProvider
	// Concurrency is the number of tasks of the queues people wait on
	// (inbound messages, deliveries, the default queue) processed at once.
	Concurrency int
	// IndexConcurrency is the number of index jobs processed at once, in
	// slots of their own: indexing never takes one of Concurrency's.
	IndexConcurrency int
	// ShutdownTimeout is how long Shutdown waits for in-flight tasks before
	// handing them back to the queue.
	ShutdownTimeout time.Duration
	// TaskCheckInterval is the idle poll interval of the queues.
	TaskCheckInterval time.Duration
	// IndexSlotsPerWorkspace bounds one workspace's concurrent index jobs.
	IndexSlotsPerWorkspace int
}

// Processors are the use cases the server's handlers call.
type Processors struct {
	Inbound   InboundProcessor
	Knowledge KnowledgeIndexer
	Slots     WorkspaceSlots
	Delivery  DeliveryProcessor
	// AutoAssign runs auto-assignments; nil in tests of other tasks, whose
	// servers then take no conversation:assign task.
	AutoAssign AutoAssigner
}

// userQueuePriorities weighs the queues people wait on: with all busy,
// inbound messages get six of every ten slots, deliveries (handoffs a person
// waits for) three, and the default queue is never starved.
func userQueuePriorities() map[string]int {
	return map[string]int{
		QueueInbound:  6,
		QueueDelivery: 3,
		QueueDefault:  1,
	}
}

// Server runs asynq task handlers. Start it, and Shutdown it under the
// process's signal context: it never installs signal handlers itself.
//
// It is two asynq servers on one Redis, each with its own slots: one for
// the queues people wait on, one for indexing. A weighted single pool, as
// before, let slow crawls take every slot (a queue's weight only orders
// which task is taken next, not how long it holds its slot), so another
// workspace's webhook messages waited minutes; apart, no number of crawls
// can delay a message.
type Server struct {
	user       *asynq.Server
	index      *asynq.Server
	userMux    *asynq.ServeMux
	indexMux   *asynq.ServeMux
	inbound    InboundProcessor
	knowledge  KnowledgeIndexer
	slots      WorkspaceSlots
	delivery   DeliveryProcessor
	autoAssign AutoAssigner
	indexSlots int
	logger     *slog.Logger
}

// NewServer returns a server processing the queues in redisOpt's Redis with
// the given processors. It does not connect until Start.
func NewServer(redisOpt asynq.RedisConnOpt, cfg ServerConfig, procs Processors, logger *slog.Logger) *Server {
	if procs.Inbound == nil || procs.Knowledge == nil || procs.Slots == nil || procs.Delivery == nil {
		panic("workers.NewServer: every processor is required")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.IndexConcurrency <= 0 {
		cfg.IndexConcurrency = DefaultIndexConcurrency
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.TaskCheckInterval <= 0 {
		cfg.TaskCheckInterval = DefaultTaskCheckInterval
	}
	if cfg.IndexSlotsPerWorkspace <= 0 {
		cfg.IndexSlotsPerWorkspace = DefaultIndexSlotsPerWorkspace
	}
	logger = logger.With("component", "worker")
	s := &Server{inbound: procs.Inbound, knowledge: procs.Knowledge, slots: procs.Slots, delivery: procs.Delivery, autoAssign: procs.AutoAssign,
		indexSlots: cfg.IndexSlotsPerWorkspace, logger: logger, userMux: asynq.NewServeMux(), indexMux: asynq.NewServeMux()}
	s.userMux.HandleFunc(TypeInboundProcess, s.handleInboundProcess)
	s.userMux.HandleFunc(TypeHandoffDeliver, s.handleDeliver)
	s.userMux.HandleFunc(TypeEventDeliver, s.handleDeliver)
	if procs.AutoAssign != nil {
		s.userMux.HandleFunc(TypeConversationAssign, s.handleConversationAssign)
	}
	s.indexMux.HandleFunc(TypeKnowledgeIndex, s.handleKnowledgeIndex)
	if cfg.Traces != nil {
		s.userMux.Use(continueTraces(cfg.Traces))
		s.indexMux.Use(continueTraces(cfg.Traces))
	}
	s.user = asynq.NewServer(redisOpt, s.asynqConfig(cfg, cfg.Concurrency, userQueuePriorities(), cfg.TaskCheckInterval))
	s.index = asynq.NewServer(redisOpt, s.asynqConfig(cfg, cfg.IndexConcurrency, map[string]int{QueueKnowledge: 1},
		max(cfg.TaskCheckInterval, indexTaskCheckInterval)))
	return s
}

// asynqConfig is the configuration both asynq servers share, with their own
// slots, queues and idle poll.
func (s *Server) asynqConfig(cfg ServerConfig, concurrency int, queues map[string]int, poll time.Duration) asynq.Config {
	return asynq.Config{
		Concurrency:              concurrency,
		Queues:                   queues,
		TaskCheckInterval:        poll,
		DelayedTaskCheckInterval: delayedTaskCheckInterval,
		ShutdownTimeout:          cfg.ShutdownTimeout,
		RetryDelayFunc:           RetryDelay,
		IsFailure:                isFailure,
		ErrorHandler:             asynq.ErrorHandlerFunc(s.logTaskError),
		HealthCheckFunc: func(err error) {
			if err != nil {
				s.logger.Warn("asynq cannot reach redis", "error", err)
			}
		},
		Logger: asynqLogger{logger: s.logger.With("source", "asynq")},
		// asynq logs every empty poll at debug level; with a 10 ms poll that
		// would flood a debug-level slog handler.
		LogLevel: asynq.InfoLevel,
	}
}

// Start begins processing in background goroutines and returns at once.
func (s *Server) Start() error {
	if err := s.user.Start(s.userMux); err != nil {
		return fmt.Errorf("start worker server: %w", err)
	}
	if err := s.index.Start(s.indexMux); err != nil {
		s.user.Shutdown()
		return fmt.Errorf("start worker server for indexing: %w", err)
	}
	return nil
}

// Shutdown stops taking new tasks and waits up to ShutdownTimeout for
// in-flight ones; tasks still running then go back to their queue, to run
// again on another worker (handlers are idempotent; a crawl continues from
// its recorded progress).
func (s *Server) Shutdown() {
	var wg sync.WaitGroup
	wg.Go(s.user.Shutdown)
	wg.Go(s.index.Shutdown)
	wg.Wait()
}

// handleInboundProcess decodes the payload and hands the event id to the processor.
func (s *Server) handleInboundProcess(ctx context.Context, t *asynq.Task) error {
	// Unknown fields are ignored on purpose: during a rolling deploy a newer
	// enqueuer may add fields that this worker does not know yet.
	var p InboundProcessPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		// Every attempt would decode the same bytes the same way: invalid
		// input, which the one retry mapping makes permanent.
		return toAsynqError(fmt.Errorf("%s: malformed payload: %w: %w", TypeInboundProcess, err, domain.ErrInvalidInput))
	}
	if !domain.ValidID(domain.PrefixInboundEvent, p.EventID) {
		return toAsynqError(fmt.Errorf("%s: payload has no valid event id: %w", TypeInboundProcess, domain.ErrInvalidInput))
	}
	if err := s.inbound.ProcessInboundEvent(ctx, p.EventID); err != nil {
		return toAsynqError(fmt.Errorf("process inbound event %s: %w", p.EventID, err))
	}
	return nil
}

// logTaskError is asynq's ErrorHandler. It logs identifiers only, never the
// raw payload, so nothing a future payload might carry ends up in logs.
func (s *Server) logTaskError(ctx context.Context, t *asynq.Task, err error) {
	if errors.Is(err, errWorkspaceBusy) || errors.Is(err, errCrawlContinues) || isDeliveryOutcome(err) {
		return
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	taskID, _ := asynq.GetTaskID(ctx)
	queue, _ := asynq.GetQueueName(ctx)
	attrs := []any{
		"taskType", t.Type(),
		"taskId", taskID,
		"queue", queue,
		"retried", retried,
		"maxRetry", maxRetry,
		"error", err,
	}
	if id := eventIDOf(t); id != "" {
		attrs = append(attrs, "eventId", id)
	}
	if id := deliveryIDOf(t); id != "" {
		attrs = append(attrs, "deliveryId", id)
	}
	switch {
	case errors.Is(err, asynq.SkipRetry):
		s.logger.ErrorContext(ctx, "task failed permanently; archived", attrs...)
	case retried >= maxRetry:
		s.logger.ErrorContext(ctx, "task failed and exhausted its retries; archived", attrs...)
	default:
		s.logger.WarnContext(ctx, "task failed; will retry", attrs...)
	}
}

// eventIDOf returns the event id of an inbound task, or "" for other tasks and
// undecodable payloads.
func eventIDOf(t *asynq.Task) string {
	if t.Type() != TypeInboundProcess {
		return ""
	}
	var p InboundProcessPayload
	if json.Unmarshal(t.Payload(), &p) != nil || !domain.ValidID(domain.PrefixInboundEvent, p.EventID) {
		return ""
	}
	return p.EventID
}

// deliveryIDOf returns the delivery id of a delivery task, or "" for other
// tasks and undecodable payloads.
func deliveryIDOf(t *asynq.Task) string {
	if t.Type() != TypeHandoffDeliver && t.Type() != TypeEventDeliver {
		return ""
	}
	var p DeliverPayload
	if json.Unmarshal(t.Payload(), &p) != nil || !domain.ValidID(domain.PrefixDelivery, p.DeliveryID) {
		return ""
	}
	return p.DeliveryID
}

// asynqLogger routes asynq's own logs to slog.
type asynqLogger struct {
	logger *slog.Logger
}

var _ asynq.Logger = asynqLogger{}

func (l asynqLogger) Debug(args ...any) { l.logger.Debug(fmt.Sprint(args...)) }
func (l asynqLogger) Info(args ...any)  { l.logger.Info(fmt.Sprint(args...)) }
func (l asynqLogger) Warn(args ...any)  { l.logger.Warn(fmt.Sprint(args...)) }
func (l asynqLogger) Error(args ...any) { l.logger.Error(fmt.Sprint(args...)) }

// Fatal logs at error level and does not exit: exiting here would skip the
// process's graceful shutdown. asynq v0.26 never calls it.
func (l asynqLogger) Fatal(args ...any) { l.logger.Error(fmt.Sprint(args...), "fatal", true) }
