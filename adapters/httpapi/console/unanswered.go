package console

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/unanswered"
)

// Unanswered questions (issue 18, items 3 and 4): every member who reads
// conversations (domain.PermConversations) sees an agent's topics; owners
// and admins (domain.PermAgents, who manage knowledge) write the answers,
// which become Q&A sources. The pages hide the forms from the others and
// the routes refuse their POSTs before the service is asked.

// Unanswered is unanswered.Service as the console uses it.
type Unanswered interface {
	List(ctx context.Context, workspaceID string, r unanswered.ListRequest) (domain.TopicPage, error)
	Get(ctx context.Context, workspaceID, slug, topicID string) (domain.UnansweredTopic, error)
	Answer(ctx context.Context, workspaceID, slug, topicID string, a domain.TopicAnswer) (domain.UnansweredTopic, domain.Source, error)
	Question(ctx context.Context, workspaceID, slug, conversationID, questionID string) (domain.UnansweredQuestion, error)
	ImproveAnswer(ctx context.Context, workspaceID, slug, conversationID, questionID string, a domain.TopicAnswer) (domain.Source, string, error)
}

func (h *Handlers) unansweredService() (Unanswered, error) {
	if h.unanswered == nil {
		return nil, domain.Unavailable("unanswered service", errors.New("console built without Options.Unanswered"))
	}
	return h.unanswered, nil
}

// topicRow is a topic as the pages show it.
type topicRow struct {
	domain.UnansweredTopic
	URL                   string
	LastSeen, LastSeenISO string
	FirstSeen             string
	// ReasonText lists the reasons with their counts, in words.
	ReasonText string
	Addressed  bool
	Examples   []exampleRow
}

type exampleRow struct {
	domain.UnansweredQuestion
	URL, Asked, AskedISO, ReasonText string
}

func (h *Handlers) newTopicRow(c *fiber.Ctx, slug string, t domain.UnansweredTopic) topicRow {
	ws := Prefix + "/w/" + member(c).WorkspaceID
	r := topicRow{UnansweredTopic: t, URL: ws + "/agents/" + slug + "/unanswered/" + t.ID, Addressed: t.Status == domain.TopicAddressed}
	r.LastSeen, r.LastSeenISO = formatEdited(t.LastSeenAt)
	r.FirstSeen, _ = formatEdited(t.FirstSeenAt)
	var parts []string
	for _, reason := range domain.UnansweredReasons {
		if n := t.Reasons[reason]; n > 0 {
			parts = append(parts, mustText("unanswered.reason."+string(reason))+" "+strconv.Itoa(n))
		}
	}
	r.ReasonText = strings.Join(parts, ", ")
	for _, q := range t.Examples {
		e := exampleRow{UnansweredQuestion: q, URL: ws + "/conversations/" + q.ConversationID,
			ReasonText: mustText("unanswered.reason." + string(q.Reason))}
		e.Asked, e.AskedISO = formatEdited(q.AskedAt)
		r.Examples = append(r.Examples, e)
	}
	return r
}

type unansweredPage struct {
	Agent  domain.Agent
	Rows   []topicRow
	Order  string
	Status string
	// Recent and Largest are the list's URLs in each order (the status
	// kept); Next the next page's, "" on the last; Later says this is not
	// the first page.
	Recent, Largest, Next, First string
	Later                        bool
}

// UnansweredLanding lists the workspace's agents, each linking to its
// unanswered topics.
func (h *Handlers) UnansweredLanding(c *fiber.Ctx) error {
	v, err := h.newView(c, mustText("unanswered.title"), "unanswered")
	if err != nil {
		return err
	}
	all, err := h.workspaceAgents(c)
	if err != nil {
		return err
	}
	v.Data = all
	return h.render(c, fiber.StatusOK, "unanswered-agents", v)
}

// UnansweredPage lists an agent's topics, newest activity or largest
// first, open, addressed or both. A bad order, status or cursor is shown
// on the page with 400.
func (h *Handlers) UnansweredPage(c *fiber.Ctx) error {
	s, err := h.unansweredService()
	if err != nil {
		return err
	}
	slug := strings.Clone(c.Params("slug"))
	a, err := h.agents.Get(c.UserContext(), member(c).WorkspaceID, slug)
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("unanswered.agent.title", a.Name), "unanswered")
	if err != nil {
		return err
	}
	base := Prefix + "/w/" + member(c).WorkspaceID + "/agents/" + slug + "/unanswered"
	pg := &unansweredPage{Agent: a, First: base}
	v.Data = pg
	req, scope, err := wire.TopicListRequest(c, slug)
	pg.Order, pg.Status = string(req.Order), string(req.Status)
	status := ""
	if pg.Status != "" {
		status = "&status=" + url.QueryEscape(pg.Status)
	}
	pg.Recent, pg.Largest = base+"?order=recent"+status, base+"?order=largest"+status
	pg.Later = c.Query("cursor") != ""
	var page domain.TopicPage
	if err == nil {
		page, err = s.List(c.UserContext(), member(c).WorkspaceID, req)
	}
	if err != nil {
		// A bad order, status or cursor: the page has no field to show it
		// next to, so the message stands above the (empty) list.
		var verr *domain.ValidationError
		if !errors.As(err, &verr) {
			return err
		}
		v.Error = verr.Message
		return h.render(c, fiber.StatusBadRequest, "unanswered", v)
	}
	for _, t := range page.Items {
		pg.Rows = append(pg.Rows, h.newTopicRow(c, slug, t))
	}
	if list := wire.NewList(wire.TopicPage(req.Order, page), scope, func(t domain.UnansweredTopic) string { return t.ID }); list.Meta.NextCursor != nil {
		pg.Next = base + "?order=" + pg.Order + status + "&cursor=" + url.QueryEscape(*list.Meta.NextCursor)
	}
	return h.render(c, fiber.StatusOK, "unanswered", v)
}

// answerForm is the improve form as typed.
type answerForm struct {
	Question, Answer string
}

type topicPage struct {
	Agent domain.Agent
	Topic topicRow
	// Action is where the form posts; CanAnswer shows it.
	Action    string
	CanAnswer bool
	Form      answerForm
	// SourceURL links the answering source's agent knowledge page.
	SourceURL              string
	MaxQuestion, MaxAnswer int
	// Back links the list (topic) or the conversation (one answer).
	Back string
	// Conversation is set when improving one answer of a conversation.
	Conversation string
}

func (h *Handlers) topicView(c *fiber.Ctx, s Unanswered) (*view, *topicPage, error) {
	slug := strings.Clone(c.Params("slug"))
	ws := member(c).WorkspaceID
	a, err := h.agents.Get(c.UserContext(), ws, slug)
	if err != nil {
		return nil, nil, err
	}
	t, err := s.Get(c.UserContext(), ws, slug, strings.Clone(c.Params("topicID")))
	if err != nil {
		return nil, nil, err
	}
	v, err := h.newView(c, mustText("unanswered.topic.title"), "unanswered")
	if err != nil {
		return nil, nil, err
	}
	row := h.newTopicRow(c, slug, t)
	pg := &topicPage{Agent: a, Topic: row, Action: row.URL + "/answer", CanAnswer: member(c).Role.Can(domain.PermAgents),
		Form: answerForm{Question: t.Label}, MaxQuestion: domain.MaxQuestionLength, MaxAnswer: domain.MaxAnswerLength,
		Back: Prefix + "/w/" + ws + "/agents/" + slug + "/unanswered"}
	if t.SourceID != "" {
		pg.SourceURL = Prefix + "/w/" + ws + "/agents/" + slug + "/knowledge"
	}
	v.Data = pg
	return v, pg, nil
}

// TopicPage shows a topic: its counts, reasons and example questions
// linking to their conversations, and the improve form.
func (h *Handlers) TopicPage(c *fiber.Ctx) error {
	s, err := h.unansweredService()
	if err != nil {
		return err
	}
	v, _, err := h.topicView(c, s)
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "unanswered-topic", v)
}

func answerFormOf(c *fiber.Ctx) answerForm {
	return answerForm{Question: formValue(c, "question"), Answer: formValue(c, "answer")}
}

// AnswerTopic writes the answer as a Q&A source and addresses the topic;
// a refusal shows the form again as typed.
func (h *Handlers) AnswerTopic(c *fiber.Ctx) error {
	s, err := h.unansweredService()
	if err != nil {
		return err
	}
	v, pg, err := h.topicView(c, s)
	if err != nil {
		return err
	}
	f := answerFormOf(c)
	_, _, err = s.Answer(c.UserContext(), member(c).WorkspaceID, pg.Agent.Slug, pg.Topic.ID, domain.TopicAnswer{Question: f.Question, Answer: f.Answer})
	if err == nil {
		return redirect(c, pg.Topic.URL+"?done=topicanswered")
	}
	if ferr := formError(v, err); ferr != nil {
		return ferr
	}
	pg.Form = f
	return h.render(c, statusOf(err), "unanswered-topic", v)
}

// improveView reads the question of ?conversation= and ?question= (or the
// form's fields): a USER message of a conversation of the agent.
func (h *Handlers) improveView(c *fiber.Ctx, s Unanswered) (*view, *topicPage, domain.UnansweredQuestion, error) {
	slug := strings.Clone(c.Params("slug"))
	ws := member(c).WorkspaceID
	a, err := h.agents.Get(c.UserContext(), ws, slug)
	if err != nil {
		return nil, nil, domain.UnansweredQuestion{}, err
	}
	conv, qid := strings.Clone(c.Query("conversation")), strings.Clone(c.Query("question"))
	q, err := s.Question(c.UserContext(), ws, slug, conv, qid)
	if err != nil {
		return nil, nil, q, err
	}
	v, err := h.newView(c, mustText("unanswered.improve.title"), "unanswered")
	if err != nil {
		return nil, nil, q, err
	}
	pg := &topicPage{Agent: a, CanAnswer: true, Form: answerForm{Question: q.Text},
		Action:      Prefix + "/w/" + ws + "/agents/" + slug + "/improve?conversation=" + url.QueryEscape(conv) + "&question=" + url.QueryEscape(qid),
		MaxQuestion: domain.MaxQuestionLength, MaxAnswer: domain.MaxAnswerLength,
		Back: Prefix + "/w/" + ws + "/conversations/" + conv, Conversation: conv}
	v.Data = pg
	return v, pg, q, nil
}

// ImprovePage is the improve form for one answer of a conversation, the
// visitor's question prefilled.
func (h *Handlers) ImprovePage(c *fiber.Ctx) error {
	s, err := h.unansweredService()
	if err != nil {
		return err
	}
	v, _, _, err := h.improveView(c, s)
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "unanswered-topic", v)
}

// ImproveAnswer writes the answer as a Q&A source linked to the question
// (and addresses its topic), then returns to the conversation.
func (h *Handlers) ImproveAnswer(c *fiber.Ctx) error {
	s, err := h.unansweredService()
	if err != nil {
		return err
	}
	v, pg, q, err := h.improveView(c, s)
	if err != nil {
		return err
	}
	f := answerFormOf(c)
	_, _, err = s.ImproveAnswer(c.UserContext(), member(c).WorkspaceID, pg.Agent.Slug, q.ConversationID, q.MessageID,
		domain.TopicAnswer{Question: f.Question, Answer: f.Answer})
	if err == nil {
		return redirect(c, pg.Back+"?done=improved")
	}
	if ferr := formError(v, err); ferr != nil {
		return ferr
	}
	pg.Form = f
	return h.render(c, statusOf(err), "unanswered-topic", v)
}

// improveLinks gives each answer of a transcript its "Improve this
// answer" link, for members who may write one: to the improve form of the
// visitor's question before it on the page. Playground transcripts get
// none (their questions are the team's own).
func (h *Handlers) improveLinks(c *fiber.Ctx, slug, convID string, rows []messageRow) {
	if h.unanswered == nil || !member(c).Role.Can(domain.PermAgents) {
		return
	}
	base := Prefix + "/w/" + member(c).WorkspaceID + "/agents/" + slug + "/improve?conversation=" + url.QueryEscape(convID) + "&question="
	question := ""
	for i := range rows {
		switch rows[i].Role {
		case domain.RoleUser:
			question = rows[i].ID
		case domain.RoleAssistant:
			if question != "" {
				rows[i].Improve = base + url.QueryEscape(question)
			}
		}
	}
}
