package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.OutcomeStore = (*Store)(nil)

// outcomeColumn is a conversation's stored outcome, for the conversation
// reads (conversationColumns): one primary key lookup per row, NULL while
// undecided. A scalar subquery rather than a join keeps every query that
// selects the columns (lists, RETURNING clauses) as it is.
const outcomeColumn = `(SELECT o.outcome FROM conversation_outcomes AS o WHERE o.conversation_id = c.id) AS outcome`

// maxRecentQuestions bounds the USER messages read, latest first, to find
// the visitor's last question past the small talk after it.
const maxRecentQuestions = 20

// maxLaterContacts bounds the later conversations of one verified user read
// for a decision: a re-contact needs one on the same topic, and a user
// with more than this in a week is a test or a script.
const maxLaterContacts = 20

// claimDueOutcomesSQL claims up to $2 rows due at $1. It is a statement of
// its own, before the signals are read (dueSignalsSQL): a statement reads
// one snapshot, taken before it waited for any lock, so signals read by
// the claiming statement could miss an event that committed just before
// the row was claimed, and the decision would stay stale (migration 00029
// has the whole argument).
const claimDueOutcomesSQL = `SELECT conversation_id FROM conversation_outcomes
	WHERE next_check_at <= $1
	ORDER BY next_check_at, conversation_id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// dueSignalsSQL gathers the signals of the claimed rows ($1 their ids; $2
// the re-contact window in seconds, $3 maxLaterContacts, $4
// maxRecentQuestions): a handful of index walks of the conversation's own
// messages (messages_conversation_seq_idx) and of its verified user's
// conversations (conversations_verified_user_activity_idx), never a scan.
// The recent USER messages come latest first, each with whether it got no
// ASSISTANT answer or a fallback before the next one; domain.LastQuestion
// picks the one that counts.
const dueSignalsSQL = `WITH due AS (
	SELECT unnest($1::text[]) AS conversation_id
)
SELECT c.id, c.status, coalesce(c.verified_user_id, ''), c.last_activity_at,
	coalesce(fq.content, ''), coalesce(lq.contents, '{}'),
	EXISTS (SELECT 1 FROM messages AS m WHERE m.conversation_id = c.id AND m.workspace_id = c.workspace_id
		AND m.role = 'SYSTEM' AND m.status IN ('HANDOFF_REQUESTED', 'HUMAN')),
	EXISTS (SELECT 1 FROM messages AS m WHERE m.conversation_id = c.id AND m.workspace_id = c.workspace_id AND m.role = 'HUMAN'),
	coalesce(lq.failed, '{}'),
	coalesce(r.rating, ''),
	coalesce(later.ids, '{}'), coalesce(later.ats, '{}'), coalesce(later.questions, '{}')
FROM due
JOIN conversations AS c ON c.id = due.conversation_id
LEFT JOIN LATERAL (
	SELECT m.content FROM messages AS m
	WHERE m.conversation_id = c.id AND m.workspace_id = c.workspace_id AND m.role = 'USER'
	ORDER BY m.seq LIMIT 1
) AS fq ON true
LEFT JOIN LATERAL (
	SELECT array_agg(q.content ORDER BY q.seq DESC) AS contents,
		array_agg(coalesce((SELECT a.fallback_reason <> '' FROM messages AS a
			WHERE a.conversation_id = c.id AND a.workspace_id = c.workspace_id AND a.role = 'ASSISTANT'
				AND a.seq > q.seq AND (q.next_seq IS NULL OR a.seq < q.next_seq)
			ORDER BY a.seq DESC LIMIT 1), true) ORDER BY q.seq DESC) AS failed
	FROM (
		SELECT m.content, m.seq, lag(m.seq) OVER (ORDER BY m.seq DESC) AS next_seq FROM messages AS m
		WHERE m.conversation_id = c.id AND m.workspace_id = c.workspace_id AND m.role = 'USER'
		ORDER BY m.seq DESC LIMIT $4
	) AS q
) AS lq ON true
LEFT JOIN LATERAL (
	SELECT m.feedback_rating AS rating FROM messages AS m
	WHERE m.conversation_id = c.id AND m.workspace_id = c.workspace_id AND m.role = 'ASSISTANT' AND m.feedback_rating IS NOT NULL
	ORDER BY m.feedback_at DESC, m.seq DESC LIMIT 1
) AS r ON true
LEFT JOIN LATERAL (
	SELECT array_agg(l.id ORDER BY l.created_at, l.id) AS ids, array_agg(l.created_at ORDER BY l.created_at, l.id) AS ats,
		array_agg(coalesce(l.question, '') ORDER BY l.created_at, l.id) AS questions
	FROM (
		SELECT l.id, l.created_at, (SELECT m.content FROM messages AS m
			WHERE m.conversation_id = l.id AND m.workspace_id = l.workspace_id AND m.role = 'USER' ORDER BY m.seq LIMIT 1) AS question
		FROM conversations AS l
		WHERE c.verified_user_id IS NOT NULL AND l.workspace_id = c.workspace_id AND l.verified_user_id = c.verified_user_id
			AND l.last_activity_at >= c.created_at AND l.id <> c.id
			AND l.created_at > c.created_at AND l.created_at <= c.last_activity_at + make_interval(secs => $2)
		ORDER BY l.created_at, l.id LIMIT $3
	) AS l
) AS later ON true`

// storeOutcomesSQL writes the decisions of the claimed rows: $1 ids, $2
// outcomes ("" undecided), $3 finals, $4 next checks (NULL when final), $5
// now. decided_at moves only when the outcome changes, so deciding again
// what was decided changes nothing.
const storeOutcomesSQL = `UPDATE conversation_outcomes AS o SET
	decided_at = CASE WHEN o.outcome IS NOT DISTINCT FROM NULLIF(u.outcome, '') THEN o.decided_at
		WHEN u.outcome = '' THEN NULL ELSE $5 END,
	outcome = NULLIF(u.outcome, ''),
	final = u.final,
	next_check_at = u.next_check
FROM unnest($1::text[], $2::text[], $3::boolean[], $4::timestamptz[]) AS u(id, outcome, final, next_check)
WHERE o.conversation_id = u.id`

// DecideDueOutcomes claims due rows FOR UPDATE SKIP LOCKED
// (claimDueOutcomesSQL), gathers their signals in the next statement
// (dueSignalsSQL), decides each in Go and writes every decision in a third
// statement, in one transaction.
func (s *Store) DecideDueOutcomes(ctx context.Context, now time.Time, limit int,
	decide func(domain.OutcomeSignals, time.Time) domain.OutcomeDecision) (int, error) {
	now = dbTime(now)
	var decided int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		claimed, err := claimedIDs(ctx, tx, claimDueOutcomesSQL, now, limit)
		if err != nil || len(claimed) == 0 {
			return err
		}
		rows, err := tx.Query(ctx, dueSignalsSQL, claimed, domain.OutcomeRecontactWindow.Seconds(), maxLaterContacts, maxRecentQuestions)
		if err != nil {
			return err
		}
		var (
			ids, outcomes []string
			finals        []bool
			nexts         []*time.Time
		)
		for rows.Next() {
			var (
				id, status, rating string
				sig                domain.OutcomeSignals
				laterIDs           []string
				laterAts           []time.Time
				laterQuestions     []string
				recent             []string // the last USER messages, latest first
				recentFailed       []bool   // whether each got no answer or a fallback
			)
			if err := rows.Scan(&id, &status, &sig.VerifiedUserID, &sig.LastActivityAt, &sig.FirstQuestion, &recent,
				&sig.PersonRequested, &sig.PersonReplied, &recentFailed, &rating,
				&laterIDs, &laterAts, &laterQuestions); err != nil {
				rows.Close()
				return err
			}
			sig.LastQuestion, sig.LastTurnFailed = domain.LastQuestion(recent, recentFailed)
			sig.Status, sig.LatestRating, sig.LastActivityAt = domain.ConversationStatus(status), domain.Rating(rating), sig.LastActivityAt.UTC()
			for i := range laterIDs {
				sig.LaterContacts = append(sig.LaterContacts, domain.LaterContact{
					ConversationID: laterIDs[i], CreatedAt: laterAts[i].UTC(), FirstQuestion: laterQuestions[i]})
			}
			d := decide(sig, now)
			var next *time.Time
			if !d.NextCheck.IsZero() {
				t := dbTime(d.NextCheck)
				next = &t
			}
			ids, outcomes, finals, nexts = append(ids, id), append(outcomes, string(d.Outcome)), append(finals, d.Final), append(nexts, next)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		decided = len(ids)
		_, err = tx.Exec(ctx, storeOutcomesSQL, ids, outcomes, finals, nexts, now)
		return err
	})
	if err != nil {
		return 0, dbError("decide due outcomes", err)
	}
	return decided, nil
}

// GetOutcome reads one conversation's outcome row.
func (s *Store) GetOutcome(ctx context.Context, workspaceID, conversationID string) (domain.ConversationOutcome, error) {
	var (
		o         domain.ConversationOutcome
		outcome   *string
		decided   *time.Time
		nextCheck *time.Time
		dueNow    *bool
	)
	// A row a later event marked due holds '-infinity', which time.Time
	// cannot hold: it is read as DueNow.
	err := s.pool.QueryRow(ctx, `SELECT conversation_id, workspace_id, agent_id, outcome, decided_at, final,
		CASE WHEN isfinite(next_check_at) THEN next_check_at END, next_check_at = '-infinity'
	FROM conversation_outcomes WHERE workspace_id = $1 AND conversation_id = $2`, workspaceID, conversationID).
		Scan(&o.ConversationID, &o.WorkspaceID, &o.AgentID, &outcome, &decided, &o.Final, &nextCheck, &dueNow)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ConversationOutcome{}, domain.NotFound("conversation")
	}
	if err != nil {
		return domain.ConversationOutcome{}, dbError("get outcome", err)
	}
	o.Outcome = domain.Outcome(deref(outcome))
	if decided != nil {
		o.DecidedAt = decided.UTC()
	}
	if nextCheck != nil {
		o.NextCheckAt = nextCheck.UTC()
	}
	o.DueNow = dueNow != nil && *dueNow
	return o, nil
}

// claimedIDs runs a statement that claims rows for a sweep and returns
// the ids it claimed, in its order.
func claimedIDs(ctx context.Context, tx pgx.Tx, claim string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, claim, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
