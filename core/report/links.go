package report

import (
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// FigureKind names a figure of a report that counts conversations.
type FigureKind string

// The figures of a report, each a set of conversations a list shows
// (domain.ReportFigures). Messages count messages, but they are the
// messages of the range's conversations, so they link to those.
const (
	FigureConversations FigureKind = "conversations"
	FigureMessages      FigureKind = "messages"
	// FigureOutcome needs Figure.Outcome (domain.OutcomeUndecided for the
	// undecided ones).
	FigureOutcome FigureKind = "outcome"
	// FigureFallback is the conversations with at least one fallback
	// answer; FigureFallbackReason those with one of Figure.Reason.
	FigureFallback       FigureKind = "fallback"
	FigureFallbackReason FigureKind = "fallbackReason"
	FigureHandedOff      FigureKind = "handedOff"
	// FigureRatedUp and FigureRatedDown have an answer rated so.
	FigureRatedUp   FigureKind = "ratedUp"
	FigureRatedDown FigureKind = "ratedDown"
	// FigureFirstReply is the conversations a first reply's median is
	// drawn from (Report.FirstReply.Count of them): those a person
	// answered after a handoff.
	FigureFirstReply FigureKind = "firstReply"
	// FigureResolution is the conversations the resolution median is
	// drawn from (Report.Resolution.Count): those resolved, with the time
	// it took.
	FigureResolution FigureKind = "resolution"
)

// Figure is one figure of a report.
type Figure struct {
	Kind    FigureKind
	Outcome domain.Outcome
	Reason  domain.FallbackReason
}

// ListFilter is the conversation list behind a figure: the conversations
// of agentSlug ("" for every agent) that started in rng and that the
// figure counted. Links from a report's numbers are this list, so a number
// and its list are read from the same rollup (domain.ConversationFilter).
func ListFilter(agentSlug string, rng domain.ReportRange, fig Figure) conversation.ListFilter {
	f := conversation.ListFilter{AgentSlug: agentSlug, StartedFrom: rng.From, StartedTo: rng.To.AddDate(0, 0, -1)}
	switch fig.Kind {
	case FigureOutcome:
		f.Outcome = fig.Outcome
	case FigureFallback:
		f.Fallback = domain.FallbackFilterSome
	case FigureFallbackReason:
		f.FallbackReason = fig.Reason
	case FigureHandedOff:
		f.HandedOff = true
	case FigureFirstReply:
		f.Timed = domain.DurationFirstReply
	case FigureRatedUp:
		f.Rating = domain.RatingUp
	case FigureRatedDown:
		f.Rating = domain.RatingDown
	case FigureResolution:
		f.Timed = domain.DurationResolution
	}
	return f
}

// DayRange is the range of the one day of a report's series.
func DayRange(day domain.ReportDay) domain.ReportRange {
	return domain.ReportRange{From: day.Day, To: day.Day.AddDate(0, 0, 1)}
}
