package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// workspaceChannelPrefix starts every workspace's wake-up channel, and
// workspaceLogPrefix every workspace's log key.
const (
	workspaceChannelPrefix = "concierge:workspace:"
	workspaceLogPrefix     = "concierge:workspace-events:"
)

// WorkspaceChannelFor returns the pub/sub channel on which a workspace's
// followers are woken when its log grows.
func WorkspaceChannelFor(workspaceID string) string {
	return workspaceChannelPrefix + workspaceID
}

// WorkspaceLogKeyFor returns the key of a workspace's log (a Redis stream).
func WorkspaceLogKeyFor(workspaceID string) string {
	return workspaceLogPrefix + workspaceID
}

// DefaultWorkspaceLogRetention keeps about 10,000 events of a workspace for
// a day after its last one: an inbox that was away longer than that, or
// missed more, reloads its list (the stream says reset) instead.
var DefaultWorkspaceLogRetention = LogRetention{MaxLen: 10_000, TTL: 24 * time.Hour}

// WorkspaceLog is the workspaces' event logs (ports.WorkspaceEventLog): one
// Redis stream per workspace, whose entry ids are the events' positions,
// and a wake-up channel per workspace (WorkspaceChannelFor) that the Hub
// follows (Hub.Watch).
type WorkspaceLog struct {
	client    goredis.UniversalClient
	retention LogRetention
}

var _ ports.WorkspaceEventLog = (*WorkspaceLog)(nil)

// NewWorkspaceLog returns the workspaces' logs on client, kept as r says
// (zero fields take DefaultWorkspaceLogRetention's).
func NewWorkspaceLog(client goredis.UniversalClient, r LogRetention) *WorkspaceLog {
	if r.MaxLen <= 0 {
		r.MaxLen = DefaultWorkspaceLogRetention.MaxLen
	}
	if r.TTL <= 0 {
		r.TTL = DefaultWorkspaceLogRetention.TTL
	}
	return &WorkspaceLog{client: client, retention: r}
}

// appendScript appends each event to the workspace's log, refreshes its
// expiry and wakes its followers with the newest entry's id, atomically: a
// follower woken reads everything appended before the wake-up.
//
// KEYS[1] the log; ARGV[1] the channel, ARGV[2] the log's max length,
// ARGV[3] its expiry in ms, then one envelope per event.
var appendScript = goredis.NewScript(`
local ids = {}
for i = 4, #ARGV do
	ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'e', ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[1], ids[#ids])
return ids
`)

// Append adds events to their workspaces' logs in order, one round trip per
// run of one workspace's events, sets their IDs, and wakes the followers.
// Returns an error wrapping domain.ErrUnavailable when Redis cannot be
// reached, and a plain error, appending nothing, for an event that is not
// complete.
func (l *WorkspaceLog) Append(ctx context.Context, events []domain.WorkspaceEvent) error {
	payloads := make([]string, len(events))
	for i, ev := range events {
		w, err := toWorkspaceWire(ev)
		if err != nil {
			return err
		}
		b, err := json.Marshal(w)
		if err != nil {
			return fmt.Errorf("workspace log: encode %s event: %w", ev.Type, err)
		}
		payloads[i] = string(b)
	}
	ttl := strconv.FormatInt(l.retention.TTL.Milliseconds(), 10)
	maxLen := strconv.Itoa(l.retention.MaxLen)
	for start := 0; start < len(events); {
		ws := events[start].WorkspaceID
		end := start
		args := []any{WorkspaceChannelFor(ws), maxLen, ttl}
		for ; end < len(events) && events[end].WorkspaceID == ws; end++ {
			args = append(args, payloads[end])
		}
		ids, err := appendScript.Run(ctx, l.client, []string{WorkspaceLogKeyFor(ws)}, args...).StringSlice()
		if err != nil {
			return domain.Unavailable("redis workspace log append", err)
		}
		for i, id := range ids {
			events[start+i].ID = id
		}
		start = end
	}
	return nil
}

// After returns up to limit events logged after afterID ("" is the start
// of the log), oldest first, and whether the log still holds everything
// after afterID: not when its oldest entry is newer than afterID (older
// ones were trimmed) or it is empty (it expired). Returns a
// domain.ValidationError for an afterID that is not a stream entry id, and
// errors wrapping domain.ErrUnavailable.
func (l *WorkspaceLog) After(ctx context.Context, workspaceID, afterID string, limit int) ([]domain.WorkspaceEvent, bool, error) {
	key := WorkspaceLogKeyFor(workspaceID)
	if afterID == "" {
		entries, err := l.client.XRangeN(ctx, key, "-", "+", int64(limit)).Result()
		if err != nil {
			return nil, false, domain.Unavailable("redis workspace log read", err)
		}
		events, err := decodeWorkspaceEntries(workspaceID, entries)
		return events, err == nil, err
	}
	after, err := parseStreamID(afterID)
	if err != nil {
		return nil, false, err
	}
	var newer, oldest *goredis.XMessageSliceCmd
	_, err = l.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		newer = p.XRangeN(ctx, key, "("+afterID, "+", int64(limit))
		oldest = p.XRangeN(ctx, key, "-", "+", 1)
		return nil
	})
	if err != nil {
		return nil, false, domain.Unavailable("redis workspace log read", err)
	}
	first := oldest.Val()
	if len(first) == 0 {
		return nil, false, nil
	}
	if firstID, _ := parseStreamID(first[0].ID); firstID.after(after) {
		return nil, false, nil
	}
	events, err := decodeWorkspaceEntries(workspaceID, newer.Val())
	return events, err == nil, err
}

// Tail returns the id of the workspace's newest entry, or "". Errors as
// After.
func (l *WorkspaceLog) Tail(ctx context.Context, workspaceID string) (string, error) {
	entries, err := l.client.XRevRangeN(ctx, WorkspaceLogKeyFor(workspaceID), "+", "-", 1).Result()
	if err != nil {
		return "", domain.Unavailable("redis workspace log tail", err)
	}
	if len(entries) == 0 {
		return "", nil
	}
	return entries[0].ID, nil
}

// streamID is a Redis stream entry id, "<ms>-<seq>".
type streamID struct{ ms, seq uint64 }

func (a streamID) after(b streamID) bool {
	return a.ms > b.ms || (a.ms == b.ms && a.seq > b.seq)
}

// errBadPosition answers a Last-Event-ID that this stream never sent.
var errBadPosition = &domain.ValidationError{
	Message: "Last-Event-ID must be the id of an event of this stream",
	Fields:  map[string]string{"lastEventId": "is not an event id"},
}

func parseStreamID(id string) (streamID, error) {
	msText, seqText, ok := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(msText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if !ok || err1 != nil || err2 != nil || strconv.FormatUint(ms, 10) != msText || strconv.FormatUint(seq, 10) != seqText {
		return streamID{}, errBadPosition
	}
	return streamID{ms: ms, seq: seq}, nil
}

// workspaceWireVersion is bumped when the envelope changes incompatibly.
const workspaceWireVersion = 1

// wireWorkspaceEvent is a workspace event in the log; private to this
// package. Fields are only ever added within a version.
type wireWorkspaceEvent struct {
	V              int                   `json:"v"`
	Type           string                `json:"type"`
	ConversationID string                `json:"conversationId"`
	AgentID        string                `json:"agentId,omitempty"`
	Status         string                `json:"status,omitempty"`
	AssigneeID     string                `json:"assigneeId,omitempty"`
	Message        *wireWorkspaceMessage `json:"message,omitempty"`
	At             string                `json:"at"`
}

type wireWorkspaceMessage struct {
	ID         string `json:"id"`
	Role       string `json:"role"`
	Content    string `json:"content"`
	AuthorName string `json:"authorName,omitempty"`
	CreatedAt  string `json:"createdAt"`
}

func toWorkspaceWire(ev domain.WorkspaceEvent) (wireWorkspaceEvent, error) {
	if ev.WorkspaceID == "" || ev.ConversationID == "" {
		return wireWorkspaceEvent{}, errors.New("workspace log: event without its workspace or conversation")
	}
	w := wireWorkspaceEvent{
		V: workspaceWireVersion, Type: ev.Type, ConversationID: ev.ConversationID, AgentID: ev.AgentID,
		Status: string(ev.Status), AssigneeID: ev.AssigneeID, At: ev.At.UTC().Format(timeLayout),
	}
	switch ev.Type {
	case domain.WorkspaceEventMessageCreated:
		m := ev.Message
		if m == nil {
			return w, errors.New("workspace log: message.created without its message")
		}
		w.Message = &wireWorkspaceMessage{
			ID: m.ID, Role: string(m.Role), Content: m.Content, AuthorName: m.AuthorName, CreatedAt: m.CreatedAt.UTC().Format(timeLayout),
		}
	case domain.WorkspaceEventConversationStatus:
		if ev.Status == "" {
			return w, errors.New("workspace log: conversation.status without a status")
		}
	case domain.WorkspaceEventConversationAssigned:
	default:
		return w, fmt.Errorf("workspace log: unknown event type %q", ev.Type)
	}
	return w, nil
}

// decodeWorkspaceEntries decodes log entries. One that does not decode is
// an error: skipping it would hide a hole.
func decodeWorkspaceEntries(workspaceID string, entries []goredis.XMessage) ([]domain.WorkspaceEvent, error) {
	events := make([]domain.WorkspaceEvent, 0, len(entries))
	for _, e := range entries {
		payload, _ := e.Values["e"].(string)
		var w wireWorkspaceEvent
		if err := json.Unmarshal([]byte(payload), &w); err != nil {
			return nil, fmt.Errorf("workspace log: decode entry %s: %w", e.ID, err)
		}
		if w.V != workspaceWireVersion {
			return nil, fmt.Errorf("workspace log: entry %s has version %d, want %d", e.ID, w.V, workspaceWireVersion)
		}
		at, err := time.Parse(time.RFC3339Nano, w.At)
		if err != nil {
			return nil, fmt.Errorf("workspace log: entry %s: at: %w", e.ID, err)
		}
		ev := domain.WorkspaceEvent{
			ID: e.ID, Type: w.Type, WorkspaceID: workspaceID, ConversationID: w.ConversationID, AgentID: w.AgentID,
			Status: domain.ConversationStatus(w.Status), AssigneeID: w.AssigneeID, At: at,
		}
		if m := w.Message; m != nil {
			created, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
			if err != nil {
				return nil, fmt.Errorf("workspace log: entry %s: message createdAt: %w", e.ID, err)
			}
			ev.Message = &domain.Message{
				ID: m.ID, WorkspaceID: workspaceID, ConversationID: w.ConversationID, Role: domain.Role(m.Role),
				Content: m.Content, AuthorName: m.AuthorName, CreatedAt: created,
			}
		}
		events = append(events, ev)
	}
	return events, nil
}
