package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/domain"
)

// TypeKnowledgeIndex (re)indexes one source: extract, chunk, embed, store.
const TypeKnowledgeIndex = "knowledge:index"

// QueueKnowledge carries indexing, which nobody waits on second by second.
const QueueKnowledge = "knowledge"

// Index task limits. A website crawl is the longest job: 1,000 pages at a
// polite pace take many minutes. Retries span about an hour (see RetryDelay)
// for a site or embedding provider that is down.
const (
	knowledgeMaxRetry = 8
	knowledgeTimeout  = 45 * time.Minute
)

// DefaultIndexSlotsPerWorkspace bounds the index jobs one workspace runs at
// once across all workers, so one big crawl cannot take every worker.
const DefaultIndexSlotsPerWorkspace = 2

// KnowledgeIndexPayload names the source and the generation to index.
type KnowledgeIndexPayload struct {
	WorkspaceID string `json:"workspaceId"`
	SourceID    string `json:"sourceId"`
	Generation  int    `json:"generation"`
}

// NewKnowledgeIndexTask returns the knowledge:index task of a source
// generation. Its TaskID makes enqueueing the same generation while a task
// for it is queued or running a no-op; this is the one place asynq dedupes
// for us, and it is only an optimisation: the database's generation check
// makes a duplicate run harmless. Completed tasks are not retained, so a
// later re-index of the same generation (the sweeper after a lost task) is
// accepted.
func NewKnowledgeIndexTask(ref domain.SourceRef) (*asynq.Task, error) {
	if !domain.ValidID(domain.PrefixSource, ref.SourceID) || ref.WorkspaceID == "" || ref.Generation < 0 {
		return nil, errors.New("knowledge:index task: invalid source reference")
	}
	payload, err := json.Marshal(KnowledgeIndexPayload{WorkspaceID: ref.WorkspaceID, SourceID: ref.SourceID, Generation: ref.Generation})
	if err != nil {
		return nil, fmt.Errorf("knowledge:index task: encode payload: %w", err)
	}
	return asynq.NewTask(TypeKnowledgeIndex, payload,
		asynq.Queue(QueueKnowledge),
		asynq.MaxRetry(knowledgeMaxRetry),
		asynq.Timeout(knowledgeTimeout),
		asynq.TaskID(fmt.Sprintf("%s:%s:%d", TypeKnowledgeIndex, ref.SourceID, ref.Generation)),
	), nil
}

// EnqueueIndexSource schedules knowledge:index. A task already queued or
// running for the same generation counts as enqueued. Returns an error
// wrapping domain.ErrUnavailable if Redis cannot be reached; the source stays
// PENDING and the sweeper enqueues it later.
func (e *Enqueuer) EnqueueIndexSource(ctx context.Context, ref domain.SourceRef) error {
	task, err := NewKnowledgeIndexTask(ref)
	if err != nil {
		return err
	}
	_, err = e.client.EnqueueContext(ctx, task)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return domain.Unavailable(fmt.Sprintf("enqueue %s for %s", TypeKnowledgeIndex, ref.SourceID), err)
	}
	return nil
}

// KnowledgeIndexer indexes a source generation. core/knowledge satisfies it.
type KnowledgeIndexer interface {
	// Index indexes the source, or does nothing if it is gone or superseded.
	// lastAttempt says no retry follows, so the indexer records a failure.
	Index(ctx context.Context, ref domain.SourceRef, lastAttempt bool) error
}

// WorkspaceSlots bounds concurrent work per key across every worker process.
// adapters/redis satisfies it.
type WorkspaceSlots interface {
	// TryAcquire takes one of limit slots of key for at most ttl (a crashed
	// holder's slot frees itself then). ok is false when all are taken.
	// release gives the slot back.
	TryAcquire(ctx context.Context, key string, limit int, ttl time.Duration) (release func(), ok bool, err error)
}

// errWorkspaceBusy sends a task back to wait for its workspace's slot. It is
// not a failure: it does not use up a retry (see isFailure) and comes back
// after a few seconds (see RetryDelay).
var errWorkspaceBusy = errors.New("the workspace's other index jobs are using its slots")

func isFailure(err error) bool { return err != nil && !errors.Is(err, errWorkspaceBusy) }

// busyDelay spreads waiting tasks over a few seconds.
func busyDelay() time.Duration { return 2*time.Second + rand.N(3*time.Second) }

func (s *Server) handleKnowledgeIndex(ctx context.Context, t *asynq.Task) error {
	var p KnowledgeIndexPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return toAsynqError(fmt.Errorf("%s: malformed payload: %w: %w", TypeKnowledgeIndex, err, domain.ErrInvalidInput))
	}
	ref := domain.SourceRef{WorkspaceID: p.WorkspaceID, SourceID: p.SourceID, Generation: p.Generation}
	if !domain.ValidID(domain.PrefixSource, ref.SourceID) || ref.WorkspaceID == "" {
		return toAsynqError(fmt.Errorf("%s: payload has no valid source: %w", TypeKnowledgeIndex, domain.ErrInvalidInput))
	}
	release, ok, err := s.slots.TryAcquire(ctx, "index:"+ref.WorkspaceID, s.indexSlots, knowledgeTimeout)
	if err != nil {
		return toAsynqError(err)
	}
	if !ok {
		return errWorkspaceBusy
	}
	defer release()
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	if err := s.knowledge.Index(ctx, ref, retried >= maxRetry); err != nil {
		return toAsynqError(fmt.Errorf("index source %s: %w", ref.SourceID, err))
	}
	return nil
}
