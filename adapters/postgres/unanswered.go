package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.UnansweredStore = (*Store)(nil)

// reasonColumns are the topic's counter of each reason.
var reasonColumns = map[domain.UnansweredReason]string{
	domain.ReasonFallback:  "fallback_count",
	domain.ReasonRatedDown: "rated_down_count",
	domain.ReasonHandedOff: "handed_off_count",
}

// topicColumns are what lists and reads select of a topic.
const topicColumns = `id, workspace_id, agent_id, label, terms, question_count, fallback_count, rated_down_count, handed_off_count,
	first_seen_at, last_seen_at, status, coalesce(source_id, ''), addressed_at`

func scanTopic(row pgx.Row) (domain.UnansweredTopic, error) {
	var (
		t                       domain.UnansweredTopic
		terms                   []byte
		fallback, down, handoff int
		status                  string
		addressed               *time.Time
	)
	if err := row.Scan(&t.ID, &t.WorkspaceID, &t.AgentID, &t.Label, &terms, &t.Count, &fallback, &down, &handoff,
		&t.FirstSeenAt, &t.LastSeenAt, &status, &t.SourceID, &addressed); err != nil {
		return t, err
	}
	if err := json.Unmarshal(terms, &t.Terms); err != nil {
		return t, err
	}
	t.Reasons = map[domain.UnansweredReason]int{domain.ReasonFallback: fallback, domain.ReasonRatedDown: down, domain.ReasonHandedOff: handoff}
	t.Status = domain.TopicStatus(status)
	t.FirstSeenAt, t.LastSeenAt = t.FirstSeenAt.UTC(), t.LastSeenAt.UTC()
	if addressed != nil {
		t.AddressedAt = addressed.UTC()
	}
	return t, nil
}

// GroupPendingQuestions claims ungrouped questions (the pending index),
// takes a transaction-scoped advisory lock per agent (two workers never
// create a topic for the same agent at once, so two like questions never
// start two topics), and groups each: the agent's candidates are read once
// per batch (the open index) and kept current in memory as questions join.
func (s *Store) GroupPendingQuestions(ctx context.Context, now time.Time, limit int,
	choose func(domain.UnansweredQuestion, []domain.UnansweredTopic) domain.TopicChoice) (int, error) {
	now = dbTime(now)
	var grouped int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT message_id, reason, workspace_id, agent_id, conversation_id, question, asked_at
			FROM unanswered_questions WHERE topic_id IS NULL
			ORDER BY recorded_at, message_id, reason LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.UnansweredQuestion, error) {
			var q domain.UnansweredQuestion
			var reason string
			err := r.Scan(&q.MessageID, &reason, &q.WorkspaceID, &q.AgentID, &q.ConversationID, &q.Text, &q.AskedAt)
			q.Reason, q.AskedAt = domain.UnansweredReason(reason), q.AskedAt.UTC()
			return q, err
		})
		if err != nil || len(pending) == 0 {
			return err
		}
		agents := make([]string, 0, len(pending))
		for _, q := range pending {
			agents = append(agents, q.AgentID)
		}
		slices.Sort(agents)
		for _, a := range slices.Compact(agents) {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('unanswered:' || $1, 0))`, a); err != nil {
				return err
			}
		}
		candidates := map[string][]domain.UnansweredTopic{}
		for _, q := range pending {
			if err := s.groupOne(ctx, tx, q, candidates, choose); err != nil {
				return err
			}
		}
		grouped = len(pending)
		return nil
	})
	if err != nil {
		return 0, dbError("group unanswered questions", err)
	}
	return grouped, nil
}

func (s *Store) groupOne(ctx context.Context, tx pgx.Tx, q domain.UnansweredQuestion, candidates map[string][]domain.UnansweredTopic,
	choose func(domain.UnansweredQuestion, []domain.UnansweredTopic) domain.TopicChoice) error {
	counter := reasonColumns[q.Reason]
	// The same question, already grouped for another reason: its topic
	// counts the reason, not the question again.
	var topicID string
	err := tx.QueryRow(ctx, `SELECT topic_id FROM unanswered_questions WHERE message_id = $1 AND topic_id IS NOT NULL LIMIT 1`, q.MessageID).Scan(&topicID)
	switch {
	case err == nil:
		if _, err := tx.Exec(ctx, `UPDATE unanswered_topics SET `+counter+` = `+counter+` + 1,
			last_seen_at = greatest(last_seen_at, $2) WHERE id = $1`, topicID, q.AskedAt); err != nil {
			return err
		}
		return setTopic(ctx, tx, q, topicID)
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}

	cands, ok := candidates[q.AgentID]
	if !ok {
		rows, err := tx.Query(ctx, `SELECT `+topicColumns+` FROM unanswered_topics
			WHERE agent_id = $1 AND status = 'OPEN' ORDER BY last_seen_at DESC, id DESC LIMIT $2`, q.AgentID, domain.TopicCandidates)
		if err != nil {
			return err
		}
		if cands, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.UnansweredTopic, error) { return scanTopic(r) }); err != nil {
			return err
		}
	}
	choice := choose(q, cands)
	if choice.Index >= 0 && choice.Index < len(cands) {
		t := &cands[choice.Index]
		profile := domain.AddToProfile(t.Terms, choice.Terms)
		terms, err := json.Marshal(profile)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE unanswered_topics SET terms = $2, question_count = question_count + 1,
				`+counter+` = `+counter+` + 1,
				first_seen_at = least(first_seen_at, $3), last_seen_at = greatest(last_seen_at, $3),
				label = CASE WHEN $4 > label_score THEN $5 ELSE label END, label_score = greatest(label_score, $4)
			WHERE id = $1`, t.ID, terms, q.AskedAt, domain.LabelScore(choice.Terms, profile), q.Text); err != nil {
			return err
		}
		t.Terms, t.Count = profile, t.Count+1
		if q.AskedAt.After(t.LastSeenAt) {
			t.LastSeenAt = q.AskedAt
		}
		candidates[q.AgentID] = cands
		return setTopic(ctx, tx, q, t.ID)
	}

	profile := domain.AddToProfile(nil, choice.Terms)
	terms, err := json.Marshal(profile)
	if err != nil {
		return err
	}
	t := domain.UnansweredTopic{ID: domain.NewID(domain.PrefixTopic), WorkspaceID: q.WorkspaceID, AgentID: q.AgentID, Label: q.Text,
		Count: 1, FirstSeenAt: q.AskedAt, LastSeenAt: q.AskedAt, Status: domain.TopicOpen, Terms: profile}
	if _, err := tx.Exec(ctx, `INSERT INTO unanswered_topics (id, workspace_id, agent_id, label, label_score, terms, question_count, `+counter+`,
			first_seen_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6, 1, 1, $7, $7)`,
		t.ID, t.WorkspaceID, t.AgentID, t.Label, domain.LabelScore(choice.Terms, profile), terms, q.AskedAt); err != nil {
		return err
	}
	// The newest topic is the most recently active: first among the
	// candidates; the oldest falls out, as it would from the query.
	cands = append([]domain.UnansweredTopic{t}, cands...)
	if len(cands) > domain.TopicCandidates {
		cands = cands[:domain.TopicCandidates]
	}
	candidates[q.AgentID] = cands
	return setTopic(ctx, tx, q, t.ID)
}

func setTopic(ctx context.Context, tx pgx.Tx, q domain.UnansweredQuestion, topicID string) error {
	_, err := tx.Exec(ctx, `UPDATE unanswered_questions SET topic_id = $3 WHERE message_id = $1 AND reason = $2`,
		q.MessageID, string(q.Reason), topicID)
	return err
}

// ListTopics reads a page of topics from one of the two list indexes.
func (s *Store) ListTopics(ctx context.Context, q domain.TopicQuery) (domain.TopicPage, error) {
	var (
		where = []string{"workspace_id = $1", "agent_id = $2"}
		args  = []any{q.WorkspaceID, q.AgentID}
		arg   = func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
		order = "last_seen_at DESC, id DESC"
	)
	if q.Order == domain.TopicsLargest {
		order = "question_count DESC, id DESC"
	}
	if q.After != nil {
		if q.Order == domain.TopicsLargest {
			where = append(where, "(question_count, id) < ("+arg(q.After.Count)+", "+arg(q.After.ID)+")")
		} else {
			where = append(where, "(last_seen_at, id) < ("+arg(dbTime(q.After.LastSeenAt))+", "+arg(q.After.ID)+")")
		}
	}
	if q.Status != "" {
		where = append(where, "status = "+arg(string(q.Status)))
	}
	sql := `SELECT ` + topicColumns + ` FROM unanswered_topics WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + order + ` LIMIT ` + arg(q.Limit+1)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return domain.TopicPage{}, dbError("list unanswered topics", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.UnansweredTopic, error) { return scanTopic(r) })
	if err != nil {
		return domain.TopicPage{}, dbError("list unanswered topics", err)
	}
	page := domain.TopicPage{Items: items}
	if len(items) > q.Limit {
		page.Items, page.HasMore = items[:q.Limit], true
		last := page.Items[q.Limit-1]
		page.Next = &domain.TopicPosition{LastSeenAt: last.LastSeenAt, Count: last.Count, ID: last.ID}
	}
	for i := range page.Items {
		page.Items[i].Terms = nil
	}
	return page, nil
}

// GetTopic reads a topic and its newest questions: a few more index
// entries than examples are read, as one question may count for two
// reasons.
func (s *Store) GetTopic(ctx context.Context, workspaceID, agentID, topicID string) (domain.UnansweredTopic, error) {
	t, err := scanTopic(s.pool.QueryRow(ctx, `SELECT `+topicColumns+` FROM unanswered_topics
		WHERE workspace_id = $1 AND agent_id = $2 AND id = $3`, workspaceID, agentID, topicID))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, domain.NotFound("topic")
	}
	if err != nil {
		return t, dbError("get unanswered topic", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT message_id, reason, conversation_id, question, asked_at FROM unanswered_questions
		WHERE topic_id = $1 ORDER BY asked_at DESC, message_id LIMIT $2`, topicID, domain.TopicExamples*len(domain.UnansweredReasons))
	if err != nil {
		return t, dbError("get unanswered topic", err)
	}
	defer rows.Close()
	for rows.Next() {
		q := domain.UnansweredQuestion{WorkspaceID: workspaceID, AgentID: agentID, TopicID: topicID}
		var reason string
		if err := rows.Scan(&q.MessageID, &reason, &q.ConversationID, &q.Text, &q.AskedAt); err != nil {
			return t, dbError("get unanswered topic", err)
		}
		q.Reason, q.AskedAt = domain.UnansweredReason(reason), q.AskedAt.UTC()
		if len(t.Examples) < domain.TopicExamples && !slices.ContainsFunc(t.Examples, func(e domain.UnansweredQuestion) bool { return e.MessageID == q.MessageID }) {
			t.Examples = append(t.Examples, q)
		}
	}
	if err := rows.Err(); err != nil {
		return t, dbError("get unanswered topic", err)
	}
	t.Terms = nil
	return t, nil
}

// AddressTopic marks the topic addressed and links the source to its
// newest questions, in one transaction.
func (s *Store) AddressTopic(ctx context.Context, workspaceID, agentID, topicID, sourceID string, now time.Time) error {
	now = dbTime(now)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE unanswered_topics SET status = 'ADDRESSED', source_id = $4, addressed_at = $5
			WHERE workspace_id = $1 AND agent_id = $2 AND id = $3`, workspaceID, agentID, topicID, sourceID, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return domain.NotFound("topic")
		}
		_, err = tx.Exec(ctx, `INSERT INTO unanswered_topic_sources (source_id, workspace_id, topic_id, conversation_id, message_id, created_at)
			SELECT DISTINCT ON (q.message_id) $2, $1, $3, q.conversation_id, q.message_id, $4
			FROM (SELECT message_id, conversation_id FROM unanswered_questions WHERE topic_id = $3
				ORDER BY asked_at DESC, message_id LIMIT $5) AS q
			ON CONFLICT (source_id, message_id) DO NOTHING`, workspaceID, sourceID, topicID, now, domain.MaxTopicLinks)
		return err
	})
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return dbError("address unanswered topic", err)
	}
	return err
}

// AddressQuestion links the source to one visitor question and addresses
// its topic, if any, in one transaction.
func (s *Store) AddressQuestion(ctx context.Context, workspaceID, agentID, conversationID, messageID, sourceID string, now time.Time) (string, error) {
	now = dbTime(now)
	var topicID string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages AS m
			JOIN conversations AS c ON c.id = m.conversation_id AND c.workspace_id = m.workspace_id
			WHERE m.id = $3 AND m.conversation_id = $2 AND m.workspace_id = $1 AND m.role = 'USER' AND c.agent_id = $4)`,
			workspaceID, conversationID, messageID, agentID).Scan(&found); err != nil {
			return err
		}
		if !found {
			return domain.NotFound("message")
		}
		var topic *string
		err := tx.QueryRow(ctx, `SELECT topic_id FROM unanswered_questions WHERE message_id = $1 AND topic_id IS NOT NULL LIMIT 1`, messageID).Scan(&topic)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if topic != nil {
			topicID = *topic
			if _, err := tx.Exec(ctx, `UPDATE unanswered_topics SET status = 'ADDRESSED', source_id = $2, addressed_at = $3 WHERE id = $1`,
				topicID, sourceID, now); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO unanswered_topic_sources (source_id, workspace_id, topic_id, conversation_id, message_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (source_id, message_id) DO NOTHING`, sourceID, workspaceID, topic, conversationID, messageID, now)
		return err
	})
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return "", dbError("address unanswered question", err)
	}
	return topicID, err
}

// Question reads the message and its topic.
func (s *Store) Question(ctx context.Context, workspaceID, agentID, conversationID, messageID string) (domain.UnansweredQuestion, error) {
	q := domain.UnansweredQuestion{WorkspaceID: workspaceID, AgentID: agentID, ConversationID: conversationID, MessageID: messageID}
	var topic *string
	err := s.pool.QueryRow(ctx, `SELECT m.content, m.created_at,
			(SELECT u.topic_id FROM unanswered_questions AS u WHERE u.message_id = m.id AND u.workspace_id = m.workspace_id AND u.topic_id IS NOT NULL LIMIT 1)
		FROM messages AS m
		JOIN conversations AS c ON c.id = m.conversation_id AND c.workspace_id = m.workspace_id
		WHERE m.id = $3 AND m.conversation_id = $2 AND m.workspace_id = $1 AND m.role = 'USER' AND c.agent_id = $4`,
		workspaceID, conversationID, messageID, agentID).Scan(&q.Text, &q.AskedAt, &topic)
	if errors.Is(err, pgx.ErrNoRows) {
		return q, domain.NotFound("message")
	}
	if err != nil {
		return q, dbError("unanswered question", err)
	}
	q.AskedAt, q.TopicID = q.AskedAt.UTC(), deref(topic)
	return q, nil
}
