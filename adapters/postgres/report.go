package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var (
	_ ports.ReportStore   = (*Store)(nil)
	_ ports.ReportRollups = (*Store)(nil)
)

// DurationBuckets are the upper bounds of the duration histograms the
// rollups keep (first reply, resolution): a duration counts in the first
// bucket whose bound is at or above it. A median read from them is the
// bound of the bucket holding the median conversation: exact to the
// bucket, never below the true median. docs/outcomes.md lists them.
var DurationBuckets = []time.Duration{
	30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute, 45 * time.Minute,
	time.Hour, 90 * time.Minute, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour,
	8 * time.Hour, 12 * time.Hour, 16 * time.Hour, 24 * time.Hour, 36 * time.Hour,
	48 * time.Hour, 72 * time.Hour, 5 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour,
	30 * 24 * time.Hour, 90 * 24 * time.Hour, 366 * 24 * time.Hour,
	// Anything longer: a conversation reopened after a year.
	100 * 366 * 24 * time.Hour,
}

// BucketOf returns the upper bound of d's histogram bucket.
func BucketOf(d time.Duration) time.Duration {
	for _, b := range DurationBuckets {
		if d <= b {
			return b
		}
	}
	return DurationBuckets[len(DurationBuckets)-1]
}

// bucketSeconds are DurationBuckets in whole seconds, for SQL.
func bucketSeconds() []int64 {
	out := make([]int64, len(DurationBuckets))
	for i, b := range DurationBuckets {
		out[i] = int64(b / time.Second)
	}
	return out
}

// claimDueFactsSQL claims up to $1 conversations whose facts are due (FOR
// UPDATE SKIP LOCKED) and clears their dueness. It is a statement of its
// own, before the facts are read (rollUpFactsSQL): a statement reads one
// snapshot, taken before it waited for any lock, so facts read by the
// claiming statement could miss an event (a handoff) that committed just
// before the row was claimed, with nothing left to mark it due again
// (migration 00029 has the whole argument).
const claimDueFactsSQL = `UPDATE conversation_outcomes AS o SET facts_due = false
WHERE o.conversation_id IN (
	SELECT conversation_id FROM conversation_outcomes WHERE facts_due
	LIMIT $1
	FOR UPDATE SKIP LOCKED
)
RETURNING o.conversation_id`

// rollUpFactsSQL recomputes the facts of the claimed conversations ($1
// their ids) from their messages (a few walks of
// messages_conversation_seq_idx each, never a scan), stores them, and adds
// the difference between the new and the old contribution
// (report_fact_metrics) to their days' counts (report_days), all in one
// statement: every CTE reads the snapshot before it, so "old" is the facts
// as they were. $2 are the bucket bounds in seconds. The day rows are
// written in key order, so two sweeps lock shared day rows in the same
// order and never deadlock. A playground conversation gets no facts; a
// conversation whose row is claimed but gone (deleted meanwhile) has
// nothing to do.
const rollUpFactsSQL = `WITH due AS MATERIALIZED (
	SELECT o.conversation_id, o.outcome FROM conversation_outcomes AS o
	WHERE o.conversation_id = ANY($1::text[])
), fresh AS MATERIALIZED (
	SELECT c.id AS conversation_id, c.workspace_id, c.agent_id, (c.created_at AT TIME ZONE 'UTC')::date AS started_on,
		due.outcome, coalesce(a.messages, 0)::integer AS messages, coalesce(a.handed_off, false) AS handed_off,
		coalesce(a.reasons, '{}') AS fallback_reasons, coalesce(a.thumbs_up, 0)::integer AS thumbs_up,
		coalesce(a.thumbs_down, 0)::integer AS thumbs_down,
		fr.seconds AS first_reply_seconds, (SELECT min(b) FROM unnest($2::bigint[]) AS b WHERE b >= fr.seconds) AS first_reply_bucket,
		rs.seconds AS resolution_seconds, (SELECT min(b) FROM unnest($2::bigint[]) AS b WHERE b >= rs.seconds) AS resolution_bucket,
		coalesce(u.models, '{}') AS usage_models, coalesce(u.prompt, '{}') AS usage_prompt,
		coalesce(u.completion, '{}') AS usage_completion
	FROM due
	JOIN conversations AS c ON c.id = due.conversation_id
	LEFT JOIN LATERAL (
		SELECT count(*) FILTER (WHERE m.role IN ('USER', 'ASSISTANT', 'HUMAN')) AS messages,
			bool_or(m.role = 'SYSTEM' AND m.status IN ('HANDOFF_REQUESTED', 'HUMAN')) AS handed_off,
			min(m.seq) FILTER (WHERE m.role = 'SYSTEM' AND m.status IN ('HANDOFF_REQUESTED', 'HUMAN')) AS handoff_seq,
			min(m.created_at) FILTER (WHERE m.role = 'SYSTEM' AND m.status IN ('HANDOFF_REQUESTED', 'HUMAN')) AS handoff_at,
			max(m.created_at) FILTER (WHERE m.role = 'SYSTEM' AND m.status = 'RESOLVED') AS resolved_at,
			array_agg(DISTINCT m.fallback_reason ORDER BY m.fallback_reason) FILTER (WHERE m.role = 'ASSISTANT' AND m.fallback_reason <> '') AS reasons,
			count(*) FILTER (WHERE m.role = 'ASSISTANT' AND m.feedback_rating = 'up') AS thumbs_up,
			count(*) FILTER (WHERE m.role = 'ASSISTANT' AND m.feedback_rating = 'down') AS thumbs_down
		FROM messages AS m WHERE m.conversation_id = c.id AND m.workspace_id = c.workspace_id
	) AS a ON true
	LEFT JOIN LATERAL (
		SELECT floor(extract(epoch FROM min(m.created_at) - a.handoff_at))::bigint AS seconds
		FROM messages AS m
		WHERE a.handoff_seq IS NOT NULL AND m.conversation_id = c.id AND m.workspace_id = c.workspace_id
			AND m.role = 'HUMAN' AND m.seq > a.handoff_seq
	) AS fr ON true
	LEFT JOIN LATERAL (
		SELECT floor(extract(epoch FROM a.resolved_at - c.created_at))::bigint AS seconds
		WHERE c.status = 'RESOLVED' AND a.resolved_at IS NOT NULL
	) AS rs ON true
	LEFT JOIN LATERAL (
		SELECT array_agg(t.model ORDER BY t.model) AS models, array_agg(t.p ORDER BY t.model) AS prompt,
			array_agg(t.c ORDER BY t.model) AS completion
		FROM (
			SELECT coalesce(m.model, '') AS model, sum(m.tokens_in)::bigint AS p, sum(m.tokens_out)::bigint AS c
			FROM messages AS m
			WHERE m.conversation_id = c.id AND m.workspace_id = c.workspace_id AND m.role = 'ASSISTANT'
				AND (m.tokens_in > 0 OR m.tokens_out > 0)
			GROUP BY 1
		) AS t
	) AS u ON true
	WHERE c.channel <> 'PLAYGROUND'
), old AS MATERIALIZED (
	SELECT f.* FROM conversation_facts AS f JOIN due ON f.conversation_id = due.conversation_id
), stored AS (
	INSERT INTO conversation_facts (conversation_id, workspace_id, agent_id, started_on, outcome, messages, handed_off,
		fallback_reasons, thumbs_up, thumbs_down, first_reply_seconds, first_reply_bucket, resolution_seconds,
		resolution_bucket, usage_models, usage_prompt, usage_completion, updated_at)
	SELECT conversation_id, workspace_id, agent_id, started_on, outcome, messages, handed_off,
		fallback_reasons, thumbs_up, thumbs_down, first_reply_seconds, first_reply_bucket, resolution_seconds,
		resolution_bucket, usage_models, usage_prompt, usage_completion, $3 FROM fresh
	ON CONFLICT (conversation_id) DO UPDATE SET outcome = EXCLUDED.outcome, messages = EXCLUDED.messages,
		handed_off = EXCLUDED.handed_off, fallback_reasons = EXCLUDED.fallback_reasons,
		thumbs_up = EXCLUDED.thumbs_up, thumbs_down = EXCLUDED.thumbs_down,
		first_reply_seconds = EXCLUDED.first_reply_seconds, first_reply_bucket = EXCLUDED.first_reply_bucket,
		resolution_seconds = EXCLUDED.resolution_seconds, resolution_bucket = EXCLUDED.resolution_bucket,
		usage_models = EXCLUDED.usage_models, usage_prompt = EXCLUDED.usage_prompt,
		usage_completion = EXCLUDED.usage_completion, updated_at = EXCLUDED.updated_at
), deltas AS (
	SELECT d.workspace_id, d.started_on, d.agent_id, d.metric, sum(d.n) AS n FROM (
		SELECT f.workspace_id, f.started_on, f.agent_id, m.metric, m.n FROM fresh AS f,
			report_fact_metrics(f.outcome, f.messages, f.handed_off, f.fallback_reasons, f.thumbs_up, f.thumbs_down,
				f.first_reply_bucket, f.resolution_bucket, f.usage_models, f.usage_prompt, f.usage_completion) AS m
		UNION ALL
		SELECT f.workspace_id, f.started_on, f.agent_id, m.metric, -m.n FROM old AS f,
			report_fact_metrics(f.outcome, f.messages, f.handed_off, f.fallback_reasons, f.thumbs_up, f.thumbs_down,
				f.first_reply_bucket, f.resolution_bucket, f.usage_models, f.usage_prompt, f.usage_completion) AS m
	) AS d
	GROUP BY 1, 2, 3, 4
	HAVING sum(d.n) <> 0
), counted AS (
	INSERT INTO report_days AS r (workspace_id, day, agent_id, counts)
	SELECT workspace_id, started_on, agent_id, jsonb_object_agg(metric, n) FROM deltas
	GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
	ON CONFLICT (workspace_id, day, agent_id) DO UPDATE SET counts = report_counts_add(r.counts, EXCLUDED.counts)
)
SELECT 1`

// RollUpDueFacts claims up to limit due conversations (claimDueFactsSQL),
// then recomputes their facts and applies them to the day counters in the
// next statement (rollUpFactsSQL), in one transaction. When fewer than
// limit were due, the rollups are up to date: now becomes the reports'
// AsOf.
func (s *Store) RollUpDueFacts(ctx context.Context, now time.Time, limit int) (int, error) {
	now = dbTime(now)
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		claimed, err := claimedIDs(ctx, tx, claimDueFactsSQL, limit)
		if err != nil {
			return err
		}
		n = len(claimed)
		if n > 0 {
			if _, err := tx.Exec(ctx, rollUpFactsSQL, claimed, bucketSeconds(), now); err != nil {
				return err
			}
		}
		if n >= limit {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO report_rollup_state AS s (id, swept_at) VALUES (true, $1)
			ON CONFLICT (id) DO UPDATE SET swept_at = greatest(s.swept_at, EXCLUDED.swept_at)`, now)
		return err
	})
	if err != nil {
		return 0, dbError("roll up facts", err)
	}
	return n, nil
}

// reportSQL reads a workspace's day rows over a range ($2, $3 days; $4 an
// agent or ""): a walk of the primary key, one row per day and agent. They
// are summed in Go: PostgreSQL's aggregate over their expanded counts cost
// ten times the read (docs/benchmarks.md, reports).
const reportSQL = `SELECT r.day, r.agent_id, r.counts FROM report_days AS r
WHERE r.workspace_id = $1 AND r.day >= $2 AND r.day < $3 AND ($4 = '' OR r.agent_id = $4)`

// Report sums q's day rows (reportSQL) into its figures: totals, one
// ReportDay per day, medians from the merged histograms, and token usage
// by agent and model.
func (s *Store) Report(ctx context.Context, q domain.ReportQuery) (domain.Report, error) {
	from, to := q.Range.From.UTC(), q.Range.To.UTC()
	rep := domain.Report{Query: q, Totals: newFigures()}
	days := max(q.Range.Days(), 0)
	rep.Days = make([]domain.ReportDay, days)
	for i := range rep.Days {
		rep.Days[i] = domain.ReportDay{Day: from.AddDate(0, 0, i), ReportFigures: newFigures()}
	}
	type usageKey struct{ agent, model string }
	usage := map[usageKey]*domain.UsageFigure{}
	firstReply, resolution := map[int64]int{}, map[int64]int{}
	rows, err := s.pool.Query(ctx, reportSQL, q.WorkspaceID, from, to, q.AgentID)
	if err != nil {
		return domain.Report{}, dbError("report", err)
	}
	for rows.Next() {
		var (
			day    time.Time
			agent  string
			counts []byte
		)
		if err := rows.Scan(&day, &agent, &counts); err != nil {
			rows.Close()
			return domain.Report{}, dbError("report", err)
		}
		i := int(day.UTC().Sub(from) / (24 * time.Hour))
		if i < 0 || i >= days {
			continue
		}
		err := eachCount(counts, func(metric string, n int64) {
			kind, arg, _ := strings.Cut(metric, ":")
			switch kind {
			case "first_reply", "resolution":
				bound, err := strconv.ParseInt(arg, 10, 64)
				if err != nil {
					return
				}
				h := firstReply
				if kind == "resolution" {
					h = resolution
				}
				h[bound] += int(n)
			case "prompt_tokens", "completion_tokens":
				k := usageKey{agent, arg}
				u := usage[k]
				if u == nil {
					u = &domain.UsageFigure{AgentID: agent, Model: arg}
					usage[k] = u
				}
				if kind == "prompt_tokens" {
					u.PromptTokens += n
				} else {
					u.CompletionTokens += n
				}
			default:
				addMetric(&rep.Days[i].ReportFigures, kind, arg, int(n))
				addMetric(&rep.Totals, kind, arg, int(n))
			}
		})
		if err != nil {
			rows.Close()
			return domain.Report{}, fmt.Errorf("postgres: report: counts of %s: %w", day.Format(time.DateOnly), err)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return domain.Report{}, dbError("report", err)
	}
	rep.FirstReply, rep.Resolution = histogramMedian(firstReply), histogramMedian(resolution)
	for _, u := range usage {
		if u.PromptTokens != 0 || u.CompletionTokens != 0 {
			rep.Usage = append(rep.Usage, *u)
		}
	}
	slices.SortFunc(rep.Usage, func(a, b domain.UsageFigure) int {
		if c := (b.PromptTokens + b.CompletionTokens) - (a.PromptTokens + a.CompletionTokens); c != 0 {
			if c > 0 {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.AgentID, b.AgentID); c != 0 {
			return c
		}
		return strings.Compare(a.Model, b.Model)
	})
	var asOf *time.Time
	err = s.pool.QueryRow(ctx, `SELECT swept_at FROM report_rollup_state WHERE id`).Scan(&asOf)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return domain.Report{}, dbError("report", err)
	}
	if asOf != nil {
		rep.AsOf = asOf.UTC()
	}
	return rep, nil
}

// newFigures are zero figures with every outcome present, so screens show
// each outcome's column even at zero.
func newFigures() domain.ReportFigures {
	f := domain.ReportFigures{Outcomes: make(map[domain.Outcome]int, len(domain.Outcomes)), FallbacksByReason: map[domain.FallbackReason]int{}}
	for _, o := range domain.Outcomes {
		f.Outcomes[o] = 0
	}
	return f
}

// addMetric adds n of one counter (report_fact_metrics names them) to f.
func addMetric(f *domain.ReportFigures, kind, arg string, n int) {
	switch kind {
	case "conversations":
		f.Conversations += n
	case "messages":
		f.Messages += n
	case "outcome":
		if domain.Outcome(arg) == domain.OutcomeUndecided {
			f.Undecided += n
		} else {
			f.Outcomes[domain.Outcome(arg)] += n
		}
	case "fallback":
		if arg == "" {
			f.FallbackConversations += n
		} else {
			f.FallbacksByReason[domain.FallbackReason(arg)] += n
		}
	case "handed_off":
		f.HandedOff += n
	case "rated_up":
		f.RatedUp += n
	case "rated_down":
		f.RatedDown += n
	case "thumbs_up":
		f.ThumbsUp += n
	case "thumbs_down":
		f.ThumbsDown += n
	}
}

// histogramMedian is the median of a histogram of bucket bounds (seconds)
// to counts: the bound of the bucket holding the ceil(n/2)-th duration in
// order, the lower median.
func histogramMedian(h map[int64]int) domain.DurationFigure {
	var out domain.DurationFigure
	bounds := make([]int64, 0, len(h))
	for b, n := range h {
		if n > 0 {
			bounds = append(bounds, b)
			out.Count += n
		}
	}
	if out.Count == 0 {
		return domain.DurationFigure{}
	}
	slices.Sort(bounds)
	want, seen := (out.Count+1)/2, 0
	for _, b := range bounds {
		seen += h[b]
		if seen >= want {
			out.Median = time.Duration(b) * time.Second
			break
		}
	}
	return out
}

// errBadCounts is a day row's counts that are not a JSON object of integers.
var errBadCounts = errors.New("not a JSON object of integers")

// eachCount calls fn with each key and integer of counts, a JSON object
// as PostgreSQL prints a jsonb ({"a": 1, "b": -2}). A report reads
// hundreds of them, each of dozens of keys: decoding them into maps with
// encoding/json was most of a report's time (docs/benchmarks.md), so the
// common form is read here, and only a key with an escape in it takes
// encoding/json.
func eachCount(counts []byte, fn func(key string, n int64)) error {
	if bytes.IndexByte(counts, '\\') >= 0 {
		var m map[string]int64
		if err := json.Unmarshal(counts, &m); err != nil {
			return err
		}
		for k, n := range m {
			fn(k, n)
		}
		return nil
	}
	b, i := counts, 0
	space := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
	}
	space()
	if i == len(b) || b[i] != '{' {
		return errBadCounts
	}
	i++
	space()
	if i < len(b) && b[i] == '}' {
		i++
		space()
		if i != len(b) {
			return errBadCounts
		}
		return nil
	}
	for {
		space()
		if i == len(b) || b[i] != '"' {
			return errBadCounts
		}
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return errBadCounts
		}
		key := string(b[i+1 : i+1+end])
		i += end + 2
		space()
		if i == len(b) || b[i] != ':' {
			return errBadCounts
		}
		i++
		space()
		negative := i < len(b) && b[i] == '-'
		if negative {
			i++
		}
		start := i
		var n int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-start < 18 {
			n = n*10 + int64(b[i]-'0')
			i++
		}
		if i == start || (i < len(b) && b[i] >= '0' && b[i] <= '9') {
			return errBadCounts
		}
		if negative {
			n = -n
		}
		fn(key, n)
		space()
		switch {
		case i < len(b) && b[i] == ',':
			i++
		case i < len(b) && b[i] == '}':
			i++
			space()
			if i != len(b) {
				return errBadCounts
			}
			return nil
		default:
			return errBadCounts
		}
	}
}
