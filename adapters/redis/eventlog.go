package redis

import (
	"context"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// EventLog reads the sessions' short-lived logs that EventBus.Publish
// writes: Redis streams whose entries hold an event's SSE id (field i) and
// its envelope (field e).
type EventLog struct {
	client goredis.UniversalClient
}

var _ ports.EventLog = (*EventLog)(nil)

// NewEventLog returns a log reader over client, which must use the database
// the bus writes to.
func NewEventLog(client goredis.UniversalClient) *EventLog {
	return &EventLog{client: client}
}

// Newer reports whether stream id a ("<ms>-<seq>") comes after b: the
// order Redis gives a stream's entries. An id that does not parse is
// newer than everything, so an event is never dropped for it.
func (l *EventLog) Newer(a, b string) bool {
	if b == "" {
		return true
	}
	ida, errA := parseStreamID(a)
	idb, errB := parseStreamID(b)
	return errA != nil || errB != nil || ida.after(idb)
}

// logPage is how many entries one read takes: a resuming client is usually
// a few events behind, so the first page finds it.
const logPage = 256

// Tail returns the LogID of the session's newest logged event, or "".
// Returns an error wrapping domain.ErrUnavailable when Redis cannot be read.
func (l *EventLog) Tail(ctx context.Context, sessionID string) (string, error) {
	entries, err := l.client.XRevRangeN(ctx, LogKeyFor(sessionID), "+", "-", 1).Result()
	if err != nil {
		return "", domain.Unavailable("redis log tail", err)
	}
	if len(entries) == 0 {
		return "", nil
	}
	return entries[0].ID, nil
}

// Since returns the events logged after logID, oldest first, and whether
// logID is still in the log; when it is not, every logged event. Errors as
// Tail.
func (l *EventLog) Since(ctx context.Context, sessionID, logID string) ([]*domain.LiveEvent, bool, error) {
	key := LogKeyFor(sessionID)
	if logID != "" {
		// Inclusive, so the first entry says whether logID is still there.
		entries, err := l.client.XRange(ctx, key, logID, "+").Result()
		if err != nil {
			return nil, false, domain.Unavailable("redis log read", err)
		}
		if len(entries) > 0 && entries[0].ID == logID {
			events, err := decodeEntries(entries[1:])
			return events, err == nil, err
		}
	}
	entries, err := l.client.XRange(ctx, key, "-", "+").Result()
	if err != nil {
		return nil, false, domain.Unavailable("redis log read", err)
	}
	events, err := decodeEntries(entries)
	return events, logID == "" && err == nil, err
}

// After returns the events logged after the one whose SSE id is eventID,
// oldest first, and that event's entry id; when it is not in the log, ""
// and every logged event. The log is read backwards from its newest entry,
// a page at a time, since a resuming client is usually close behind.
// Errors as Tail.
func (l *EventLog) After(ctx context.Context, sessionID, eventID string) ([]*domain.LiveEvent, string, error) {
	key := LogKeyFor(sessionID)
	var newer []goredis.XMessage // newest first
	end := "+"
	at := ""
	for {
		page, err := l.client.XRevRangeN(ctx, key, end, "-", logPage).Result()
		if err != nil {
			return nil, "", domain.Unavailable("redis log read", err)
		}
		for i, e := range page {
			if id, _ := e.Values["i"].(string); id == eventID {
				page, at = page[:i], e.ID
				break
			}
		}
		newer = append(newer, page...)
		if at != "" || len(page) < logPage {
			break
		}
		end = "(" + page[len(page)-1].ID
	}
	// Oldest first.
	slices.Reverse(newer)
	events, err := decodeEntries(newer)
	if err != nil {
		return nil, "", err
	}
	return events, at, nil
}

// decodeEntries decodes log entries into events. An entry that does not
// decode is an error: skipping it would hide a hole in what a client sees.
func decodeEntries(entries []goredis.XMessage) ([]*domain.LiveEvent, error) {
	events := make([]*domain.LiveEvent, 0, len(entries))
	for _, e := range entries {
		payload, _ := e.Values["e"].(string)
		ev, err := decodeEvent([]byte(payload), e.ID)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}
