package console

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// The conversation pages and the playground need domain.PermConversations:
// owners, admins and helpers (the agent role) alike. They call the same
// use cases as the v2 API (conversation.Service's List, Get and
// MessageTrace; chat.Service's Start and Run), with the member's
// workspace, so a conversation of another workspace is the same 404 as an
// unknown one. The playground does not go through v2's handler, which is
// plan-gated (apiAccess): the answer engine itself is not, so the
// playground works on every plan.

// Page sizes: a list page of conversations and a transcript page of
// messages (each answer's trace is read with it).
const (
	conversationPageSize = 25
	transcriptPageSize   = 50
)

// conversationService is the conversation use case, or 503 when the
// console was built without it.
func (h *Handlers) conversationService() (Conversations, error) {
	if h.conversations == nil {
		return nil, domain.Unavailable("conversation service", errors.New("console built without Options.Conversations"))
	}
	return h.conversations, nil
}

// conversationRow is a conversation as the list shows it.
type conversationRow struct {
	domain.Conversation
	Path, StatusText, Activity, ActivityISO string
	// Playground says a member started it in the playground.
	Playground bool
}

type conversationsPage struct {
	Items []conversationRow
	// Agents fill the agent filter; Statuses the status filter;
	// Fallbacks and Ratings theirs.
	Agents    []domain.Agent
	Statuses  []domain.ConversationStatus
	Fallbacks []domain.FallbackFilter
	Ratings   []domain.Rating
	// Agent, Status, From, To (dates, YYYY-MM-DD, both days included),
	// Fallback, Rating and Q (the search box) are the filter and search
	// as asked; Next the whole URL of the next page, "" on the last.
	Agent, Status, From, To, Fallback, Rating, Q string
	Next                                         string
	// QueryMin and QueryMax bound the search box, as core checks it.
	QueryMin, QueryMax int
	// Filtered says a filter is set, for the empty state's words.
	Filtered bool
	// Report holds the report filters a Reports page link set (kept as
	// hidden fields, so the form refines within them); ReportText says
	// them in words and ClearReport is this list without them.
	Report                  []reportParam
	ReportText, ClearReport string
}

// reportParam is one report filter of the list, by its query name.
type reportParam struct{ Name, Value string }

// reportParams are the report filters' query names, as the v2 list's.
var reportParams = []string{"startedFrom", "startedTo", "outcome", "fallbackReason", "handedOff", "timed"}

var (
	conversationStatuses = []domain.ConversationStatus{domain.StatusAI, domain.StatusHandoffRequested, domain.StatusHuman, domain.StatusResolved}
	fallbackFilters      = []domain.FallbackFilter{domain.FallbackFilterSome, domain.FallbackFilterNone}
	ratingFilters        = []domain.Rating{domain.RatingUp, domain.RatingDown}
)

// ConversationsPage lists the workspace's conversations, newest activity
// first, filtered by agent, status, dates, fallback and rating and
// searched by text (contact name or email, message text) as the v2 list
// allows, and paged by the same cursors. A conversation id typed into the
// search box opens that conversation; so does ?id=, the box of older
// links.
func (h *Handlers) ConversationsPage(c *fiber.Ctx) error {
	convs, err := h.conversationService()
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("convs.title"), "convs")
	if err != nil {
		return err
	}
	ws := member(c).WorkspaceID
	query := func(name string) string { return strings.TrimSpace(strings.Clone(c.Query(name))) }
	pg := &conversationsPage{
		Agent: query("agent"), Status: strings.Clone(c.Query("status")), Statuses: conversationStatuses,
		From: query("from"), To: query("to"), Fallback: query("fallback"), Rating: query("rating"), Q: query("q"),
		Fallbacks: fallbackFilters, Ratings: ratingFilters,
		QueryMin: domain.MinConversationQueryLength, QueryMax: domain.MaxConversationQueryLength,
	}
	for _, name := range reportParams {
		if value := query(name); value != "" {
			pg.Report = append(pg.Report, reportParam{Name: name, Value: value})
		}
	}
	pg.Filtered = pg.Agent != "" || pg.Status != "" || pg.From != "" || pg.To != "" || pg.Fallback != "" || pg.Rating != "" || pg.Q != "" || len(pg.Report) > 0
	v.Data = pg
	if pg.Agents, err = h.workspaceAgents(c); err != nil {
		return err
	}
	// An id opens its conversation: always from ?id=, from the search box
	// when the whole query is one (a name or words never look like an id).
	id := query("id")
	if id == "" && domain.ValidID(domain.PrefixSession, pg.Q) {
		id = pg.Q
	}
	if id != "" {
		// Only ids of this workspace open: Get scopes by workspace.
		_, _, err := convs.Get(c.UserContext(), ws, id, domain.PageRequest{Limit: 1})
		if err == nil {
			return redirect(c, Prefix+"/w/"+ws+"/conversations/"+id)
		}
		if !errors.Is(err, domain.ErrNotFound) {
			return err
		}
		pg.Q = id
		v.Error = mustText("form.problems")
		v.Fields = map[string]string{"q": mustText("convs.id.none")}
		return h.render(c, fiber.StatusNotFound, "conversations", v)
	}
	filter := conversation.ListFilter{AgentSlug: pg.Agent, Status: domain.ConversationStatus(pg.Status),
		Fallback: domain.FallbackFilter(pg.Fallback), Rating: domain.Rating(pg.Rating), Query: pg.Q}
	// The cursor is bound to the filters: a page of one search does not
	// continue another.
	keep := url.Values{"agent": {pg.Agent}, "status": {pg.Status}, "from": {pg.From}, "to": {pg.To},
		"fallback": {pg.Fallback}, "rating": {pg.Rating}, "q": {pg.Q}}
	// The cursor's scope names the report filters only when set, so the
	// cursors of lists without them stay what they were.
	scope := "console-conversations|" + keep.Encode()
	if len(pg.Report) > 0 {
		report := url.Values{}
		for _, p := range pg.Report {
			report.Set(p.Name, p.Value)
		}
		scope += "|" + report.Encode()
		clear := url.Values{}
		for name, values := range keep {
			if values[0] != "" {
				clear[name] = values
			}
		}
		pg.ClearReport = Prefix + "/w/" + ws + "/conversations"
		if len(clear) > 0 {
			pg.ClearReport += "?" + clear.Encode()
		}
		for name, values := range report {
			keep[name] = values
		}
	}
	if err := reportFilter(pg, &filter); err != nil {
		return h.conversationsError(c, v, pg, err)
	}
	filter.ActiveFrom, err = formDate(pg.From, "from")
	if err == nil {
		filter.ActiveBefore, err = formDate(pg.To, "to")
		if !filter.ActiveBefore.IsZero() {
			filter.ActiveBefore = filter.ActiveBefore.AddDate(0, 0, 1) // the whole day "to"
		}
	}
	var page domain.PageRequest
	if err == nil {
		page, err = wire.Page(c, scope, domain.PrefixSession)
	}
	if err == nil {
		page.Limit = conversationPageSize
		var got domain.Page[domain.Conversation]
		got, err = convs.List(c.UserContext(), ws, filter, page)
		if err == nil {
			base := Prefix + "/w/" + ws + "/conversations/"
			for _, x := range got.Items {
				pg.Items = append(pg.Items, conversationRow{Conversation: x, Path: base + x.ID,
					StatusText: mustText("convs.status." + string(x.Status)), Playground: x.Channel == domain.ChannelPlayground,
					Activity: x.LastActivityAt.UTC().Format("2006-01-02 15:04 UTC"), ActivityISO: x.LastActivityAt.UTC().Format("2006-01-02T15:04:05Z")})
			}
			list := wire.NewList(got, scope, func(x domain.Conversation) domain.Conversation { return x })
			if list.Meta.NextCursor != nil {
				// The link names the filters that are set (Encode sorts
				// them), then the cursor.
				link := url.Values{}
				for name, values := range keep {
					if values[0] != "" {
						link[name] = values
					}
				}
				pg.Next = Prefix + "/w/" + ws + "/conversations?" + link.Encode() + "&cursor=" + url.QueryEscape(*list.Meta.NextCursor)
			}
		}
	}
	if err != nil {
		return h.conversationsError(c, v, pg, err)
	}
	return h.render(c, fiber.StatusOK, "conversations", v)
}

// conversationsError renders the list's refusal of its filters as the
// page with the fields marked.
func (h *Handlers) conversationsError(c *fiber.Ctx, v *view, pg *conversationsPage, err error) error {
	if pg.Agent != "" && errors.Is(err, domain.ErrNotFound) {
		// The agent filter is a choice of the page: an agent it does
		// not offer is bad input, not a missing page.
		err = domain.InvalidField("agent", mustText("convs.agent.unknown"))
	}
	err = conversationFilterError(err)
	if ferr := formError(v, err); ferr != nil {
		return ferr
	}
	return h.render(c, fiber.StatusBadRequest, "conversations", v)
}

// reportFilter reads the report filters of a Reports page's link into
// filter and says them in words. A bad value is an error on the field
// "report", which the page shows on its report line.
func reportFilter(pg *conversationsPage, filter *conversation.ListFilter) error {
	if len(pg.Report) == 0 {
		return nil
	}
	values := map[string]string{}
	for _, p := range pg.Report {
		values[p.Name] = p.Value
	}
	bad := func(err error) error {
		var verr *domain.ValidationError
		if errors.As(err, &verr) {
			for name, reason := range verr.Fields {
				return domain.InvalidField("report", mustText("convs.report.bad", name+" "+reason))
			}
		}
		return err
	}
	var err error
	if filter.StartedFrom, err = wire.Day("startedFrom", values["startedFrom"]); err != nil {
		return bad(err)
	}
	if filter.StartedTo, err = wire.Day("startedTo", values["startedTo"]); err != nil {
		return bad(err)
	}
	if filter.HandedOff, err = wire.HandedOff(values["handedOff"]); err != nil {
		return bad(err)
	}
	filter.Outcome = domain.Outcome(values["outcome"])
	filter.FallbackReason = domain.FallbackReason(values["fallbackReason"])
	filter.Timed = domain.ReportDuration(values["timed"])
	switch {
	case filter.Outcome != "" && !conversation.ValidOutcomeFilter(filter.Outcome):
		return bad(domain.InvalidField("outcome", "is not an outcome"))
	case filter.FallbackReason != "" && !slices.Contains(conversation.FallbackReasons, filter.FallbackReason):
		return bad(domain.InvalidField("fallbackReason", "is not a fallback reason"))
	case filter.Timed != "" && filter.Timed != domain.DurationFirstReply && filter.Timed != domain.DurationResolution:
		return bad(domain.InvalidField("timed", "is not firstReply or resolution"))
	}
	var words []string
	from, to := values["startedFrom"], values["startedTo"]
	switch {
	case from != "" && to != "":
		words = append(words, mustText("convs.report.started", from, to))
	case from != "":
		words = append(words, mustText("convs.report.startedfrom", from))
	case to != "":
		words = append(words, mustText("convs.report.startedto", to))
	}
	if filter.Outcome != "" {
		words = append(words, mustText("convs.report.outcome", mustText("reports.outcome."+string(filter.Outcome))))
	}
	if filter.FallbackReason != "" {
		words = append(words, mustText("convs.report.reason", reasonText(string(filter.FallbackReason))))
	}
	if filter.HandedOff {
		words = append(words, mustText("convs.report.handedoff"))
	}
	if filter.Timed != "" {
		words = append(words, mustText("convs.report.timed."+string(filter.Timed)))
	}
	pg.ReportText = mustText("convs.report", strings.Join(words, ", "))
	return nil
}

// conversationFilterError puts the list's refusals in the page's words,
// next to the page's own fields (the range's end is the "to" date).
func conversationFilterError(err error) error {
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	switch {
	case verr.Fields["activeBefore"] != "":
		return domain.InvalidField("to", mustText("convs.dates.order"))
	case verr.Fields["fallback"] != "":
		return domain.InvalidField("fallback", mustText("convs.fallback.bad"))
	case verr.Fields["rating"] != "":
		return domain.InvalidField("rating", mustText("convs.rating.bad"))
	case verr.Fields["q"] != "":
		return domain.InvalidField("q", mustText("convs.q.bad", domain.MinConversationQueryLength, domain.MaxConversationQueryLength))
	}
	for _, name := range reportParams {
		if reason := verr.Fields[name]; reason != "" {
			return domain.InvalidField("report", mustText("convs.report.bad", name+" "+reason))
		}
	}
	return err
}

// formDate reads an optional date of a date input (YYYY-MM-DD, UTC);
// empty is no bound.
func formDate(s, field string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseInLocation(time.DateOnly, s, time.UTC)
	if err != nil {
		return time.Time{}, domain.InvalidField(field, mustText("convs.date.bad"))
	}
	return d, nil
}

// messageRow is a message as a transcript shows it, its words looked up
// here.
type messageRow struct {
	domain.Message
	// Kind is the role in lower case, for styles.
	Kind, RoleText, Time, TimeISO string
	// Fallback is an answer's fallback reason in words, "" for a real
	// answer; Notice a SYSTEM message's state change in words.
	Fallback, Notice string
	// Rating is the visitor's thumbs in words, "" when not rated.
	Rating    string
	Citations []citationRow
	Trace     *traceView
	// Improve is an answer's "Improve this answer" link (improveLinks),
	// "" when the member may not write one or no question precedes it.
	Improve string
}

type citationRow struct {
	domain.Citation
	Type, Score string
}

// traceView is a retrieval trace in the words and numbers a person reads:
// percentages, not probabilities; yes and no, not booleans.
type traceView struct {
	domain.RetrievalTrace
	Answerability, Threshold string
	// Factors are the answerability's features in words, "" for a trace
	// without them.
	Factors    string
	Focus      []focusRow
	Candidates []candidateRow
	Kept       int
	// Open shows the trace unfolded: the playground's latest answer's.
	Open bool
}

type focusRow struct {
	Word, Weight, Note string
}

type candidateRow struct {
	domain.TraceCandidate
	Rank               int
	Relevance, Missing string
	// Scores is the passage's numbers in one line: its score, both
	// searches' ranks and the reranker's features by name.
	Scores string
}

func percent(x float64) string { return strconv.FormatFloat(x*100, 'f', 0, 64) + "%" }

func number(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// answerFactors says what the answerability was read from: shares as
// percentages, the two flags only when set, a feature this console does
// not know by its name and value.
func answerFactors(t domain.RetrievalTrace) string {
	var parts []string
	for i, x := range t.AnswerFeatures {
		if i >= len(t.AnswerFeatureNames) {
			break
		}
		name := t.AnswerFeatureNames[i]
		switch name {
		case "missingName", "noNumber":
			if x > 0 {
				parts = append(parts, mustText("trace.factor."+name))
			}
		case "page", "title", "missingKnowledge":
			parts = append(parts, mustText("trace.factor."+name, percent(x)))
		default:
			parts = append(parts, name+" "+number(x))
		}
	}
	return strings.Join(parts, "; ")
}

func newTraceView(t domain.RetrievalTrace) *traceView {
	tv := &traceView{RetrievalTrace: t, Answerability: percent(t.Answerability), Threshold: percent(t.Threshold), Factors: answerFactors(t)}
	for _, f := range t.Focus {
		r := focusRow{Word: f.Word, Weight: number(f.Weight)}
		switch {
		case !f.InKnowledge:
			r.Note = mustText("trace.focus.absent")
		case f.Typo:
			r.Note = mustText("trace.focus.typo")
		}
		tv.Focus = append(tv.Focus, r)
	}
	for i, cand := range t.Candidates {
		r := candidateRow{TraceCandidate: cand, Rank: i + 1, Relevance: percent(cand.Relevance), Missing: strings.Join(cand.Missing, ", ")}
		keyword, vector := mustText("trace.leg.none"), mustText("trace.leg.none")
		if cand.KeywordRank > 0 {
			keyword = mustText("trace.leg", cand.KeywordRank, number(cand.KeywordScore))
		}
		if cand.VectorRank > 0 {
			vector = mustText("trace.leg", cand.VectorRank, number(cand.VectorScore))
		}
		var b strings.Builder
		b.WriteString(mustText("trace.scores", number(cand.Score), keyword, vector))
		for j, x := range cand.Features {
			name := strconv.Itoa(j + 1)
			if j < len(t.FeatureNames) {
				name = t.FeatureNames[j]
			}
			b.WriteString("; " + name + " " + number(x))
		}
		r.Scores = b.String()
		if cand.Kept {
			tv.Kept++
		}
		tv.Candidates = append(tv.Candidates, r)
	}
	return tv
}

// fallbackText is a fallback reason in words; a reason this console does
// not know yet shows as its code.
func fallbackText(r domain.FallbackReason) string {
	if r == domain.FallbackNone {
		return ""
	}
	if s, err := tr("fallback." + string(r)); err == nil {
		return s
	}
	return string(r)
}

// messageRows turns a page of messages into rows, reading each answer's
// trace (stored with the answer, read by the trace call only).
func (h *Handlers) messageRows(c *fiber.Ctx, convs Conversations, ws, convID string, msgs []domain.Message) ([]messageRow, error) {
	rows := make([]messageRow, 0, len(msgs))
	for _, m := range msgs {
		r := messageRow{Message: m, Kind: strings.ToLower(string(m.Role)), RoleText: mustText("msg.role." + string(m.Role)),
			Time: m.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"), TimeISO: m.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")}
		switch m.Role {
		case domain.RoleHuman, domain.RoleNote:
			// An internal note is marked as one wherever a transcript shows
			// it (its Kind "note" styles it): only members see transcripts.
			if m.AuthorName != "" {
				r.RoleText = mustText("msg.role."+string(m.Role)+".named", m.AuthorName)
			}
		case domain.RoleSystem:
			if m.Status != "" {
				r.Notice = mustText("msg.status", mustText("convs.status."+string(m.Status)))
			}
		case domain.RoleAssistant:
			r.Fallback = fallbackText(m.FallbackReason)
			if m.Feedback != nil {
				r.Rating = mustText("msg.rating." + string(m.Feedback.Rating))
			}
			for _, ct := range m.Citations {
				r.Citations = append(r.Citations, citationRow{Citation: ct, Type: mustText("knowledge.type." + string(ct.SourceType)), Score: number(ct.Score)})
			}
			t, err := convs.MessageTrace(c.UserContext(), ws, convID, m.ID)
			switch {
			case err == nil:
				r.Trace = newTraceView(t)
			case !errors.Is(err, domain.ErrNotFound):
				return nil, err
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

type transcriptPage struct {
	Conversation conversationRow
	Messages     []messageRow
	// Next is the URL of the next page of messages, "" on the last;
	// Later says this is not the first page.
	Next  string
	Later bool
}

// ConversationPage shows a conversation's transcript: every message, each
// answer with its citations, fallback reason, rating and retrieval trace.
func (h *Handlers) ConversationPage(c *fiber.Ctx) error {
	convs, err := h.conversationService()
	if err != nil {
		return err
	}
	ws, id := member(c).WorkspaceID, strings.Clone(c.Params("conversationID"))
	scope := "console-messages|" + id
	page, err := wire.Page(c, scope, domain.PrefixMessage)
	if err != nil {
		return err
	}
	page.Limit = transcriptPageSize
	conv, msgs, err := convs.Get(c.UserContext(), ws, id, page)
	if err != nil {
		return err
	}
	rows, err := h.messageRows(c, convs, ws, id, msgs.Items)
	if err != nil {
		return err
	}
	if conv.Channel != domain.ChannelPlayground {
		h.improveLinks(c, conv.AgentSlug, id, rows)
	}
	v, err := h.newView(c, mustText("convs.one", conv.AgentSlug), "convs")
	if err != nil {
		return err
	}
	pg := transcriptPage{Messages: rows, Later: page.After != nil,
		Conversation: conversationRow{Conversation: conv, StatusText: mustText("convs.status." + string(conv.Status)), Playground: conv.Channel == domain.ChannelPlayground,
			Activity: conv.LastActivityAt.UTC().Format("2006-01-02 15:04 UTC"), ActivityISO: conv.LastActivityAt.UTC().Format("2006-01-02T15:04:05Z")}}
	list := wire.NewList(msgs, scope, func(m domain.Message) domain.Message { return m })
	if list.Meta.NextCursor != nil {
		pg.Next = Prefix + "/w/" + ws + "/conversations/" + id + "?cursor=" + url.QueryEscape(*list.Meta.NextCursor)
	}
	v.Data = pg
	return h.render(c, fiber.StatusOK, "conversation", v)
}
