package wire

import (
	"net/url"
	"strconv"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// DayLayout is how the API and the console write a day.
const DayLayout = "2006-01-02"

// Day parses the day parameter name ("2026-11-01") as its UTC midnight;
// "" is the zero time, anything else an InvalidField naming it.
func Day(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	d, err := time.Parse(DayLayout, s)
	if err != nil {
		return time.Time{}, domain.InvalidField(name, "must be a day, as 2026-11-01")
	}
	return d, nil
}

// FormatDay writes t's UTC day, "" for the zero time.
func FormatDay(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(DayLayout)
}

// HandedOff parses the handedOff parameter: "true" keeps conversations ever
// handed to people, "" is no filter (the filter cannot keep the others).
func HandedOff(s string) (bool, error) {
	switch s {
	case "":
		return false, nil
	case "true":
		return true, nil
	}
	return false, domain.InvalidField("handedOff", "must be true")
}

// ConversationQuery is f as the query of GET /api/v2/conversations (and
// of the console's list, which takes the same report parameters), with
// only the filters that are set, so a report's figure links to its list.
func ConversationQuery(f conversation.ListFilter) url.Values {
	q := url.Values{}
	set := func(name, value string) {
		if value != "" {
			q.Set(name, value)
		}
	}
	set("agent", f.AgentSlug)
	set("status", string(f.Status))
	set("fallback", string(f.Fallback))
	set("rating", string(f.Rating))
	set("q", f.Query)
	set("assignee", f.Assignee)
	set("startedFrom", FormatDay(f.StartedFrom))
	set("startedTo", FormatDay(f.StartedTo))
	set("outcome", string(f.Outcome))
	set("fallbackReason", string(f.FallbackReason))
	if f.HandedOff {
		set("handedOff", strconv.FormatBool(true))
	}
	set("timed", string(f.Timed))
	return q
}
