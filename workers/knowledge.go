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
	"github.com/conciergehq/concierge/core/knowledge"
)

// Index task limits. A website crawl is the longest job; it crawls for at
// most knowledge.DefaultCrawlSlice per attempt and continues in the next,
// its total bounded by its time budget, so the timeout leaves room to embed
// what it read. Retries span about an hour (see RetryDelay) for a site or
// embedding provider that is down.
const (
	knowledgeMaxRetry = 8
	knowledgeTimeout  = 45 * time.Minute
)

// indexSlotLease is how long a workspace's index slot outlives a worker that
// died holding it; a live worker renews it (see WorkspaceSlots).
const indexSlotLease = time.Minute

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
func NewKnowledgeIndexTask(ctx context.Context, ref domain.SourceRef) (*asynq.Task, error) {
	if !domain.ValidID(domain.PrefixSource, ref.SourceID) || ref.WorkspaceID == "" || ref.Generation < 0 {
		return nil, errors.New("knowledge:index task: invalid source reference")
	}
	payload, err := json.Marshal(KnowledgeIndexPayload{WorkspaceID: ref.WorkspaceID, SourceID: ref.SourceID, Generation: ref.Generation})
	if err != nil {
		return nil, fmt.Errorf("knowledge:index task: encode payload: %w", err)
	}
	return newTask(ctx, TypeKnowledgeIndex, payload,
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
	task, err := NewKnowledgeIndexTask(ctx, ref)
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
	// TryAcquire takes one of limit slots of key and holds it until release
	// is called, renewing it while this process lives; a process that dies
	// holding it loses it within ttl. ok is false when all are taken.
	TryAcquire(ctx context.Context, key string, limit int, ttl time.Duration) (release func(), ok bool, err error)
}

// errWorkspaceBusy sends a task back to wait for its workspace's slot. It is
// not a failure: it does not use up a retry (see isFailure) and comes back
// after a few seconds (see RetryDelay).
var errWorkspaceBusy = errors.New("the workspace's other index jobs are using its slots")

// errCrawlContinues sends a crawl that used its time for this attempt back
// to the queue, to continue from its recorded progress after the jobs
// waiting for a slot had their turn. Not a failure either.
var errCrawlContinues = errors.New("the crawl continues in its next attempt")

func isFailure(err error) bool {
	return err != nil && !errors.Is(err, errWorkspaceBusy) && !errors.Is(err, errCrawlContinues)
}

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
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	last := retried >= maxRetry
	release, err := s.indexSlot(ctx, ref.WorkspaceID, last)
	if err != nil {
		return err
	}
	defer release()
	err = s.knowledge.Index(ctx, ref, last)
	if errors.Is(err, knowledge.ErrCrawlContinues) {
		return errCrawlContinues
	}
	if err != nil {
		return toAsynqError(fmt.Errorf("index source %s: %w", ref.SourceID, err))
	}
	return nil
}

// indexSlot takes one of the workspace's index slots, or returns
// errWorkspaceBusy to come back later. On the last attempt it waits for one
// instead: asynq archives a task without retries left whatever the error,
// and an archived task's id would keep the sweeper from enqueueing the
// source again.
func (s *Server) indexSlot(ctx context.Context, workspaceID string, last bool) (func(), error) {
	for {
		release, ok, err := s.slots.TryAcquire(ctx, "index:"+workspaceID, s.indexSlots, indexSlotLease)
		switch {
		case err != nil:
			return nil, toAsynqError(err)
		case ok:
			return release, nil
		case !last:
			return nil, errWorkspaceBusy
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(busyDelay()):
		}
	}
}
