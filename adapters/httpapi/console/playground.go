package console

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// How much of a playground conversation the playground shows (its latest
// messages), and playgroundReadLimit bounds the messages read to find
// them; a longer conversation is read in full on its transcript page.
const (
	playgroundMessages  = 50
	playgroundReadLimit = 200
)

type playgroundPage struct {
	Agents []domain.Agent
	// Agent is the chosen agent's slug; Session the conversation going
	// on, "" before the first question; Question what was typed.
	Agent, Session, Question string
	// AgentName names the conversation's agent once it has started.
	AgentName string
	Messages  []messageRow
	// Earlier says the conversation has more messages than shown.
	Earlier   bool
	MaxLength int
	// Key is the form's idempotency key (newPlaygroundKey).
	Key string
}

// playgroundView builds the playground with the conversation of session
// (when set): its latest messages with their traces.
func (h *Handlers) playgroundView(c *fiber.Ctx, agent, session, question string) (*view, *playgroundPage, error) {
	convs, err := h.conversationService()
	if err != nil {
		return nil, nil, err
	}
	if h.chat == nil {
		return nil, nil, domain.Unavailable("chat", errors.New("console built without Options.Chat"))
	}
	ws := member(c).WorkspaceID
	pg := &playgroundPage{Agent: agent, Session: session, Question: question, MaxLength: domain.MaxMessageLength, Key: newPlaygroundKey()}
	if session != "" {
		var msgs []domain.Message
		page := domain.PageRequest{Limit: transcriptPageSize}
		var conv domain.Conversation
		for {
			var got domain.Page[domain.Message]
			conv, got, err = convs.Get(c.UserContext(), ws, session, page)
			if err != nil {
				return nil, nil, err
			}
			msgs = append(msgs, got.Items...)
			if !got.HasMore || got.Next == nil || len(msgs) >= playgroundReadLimit {
				pg.Earlier = got.HasMore
				break
			}
			page.After = got.Next
		}
		if len(msgs) > playgroundMessages {
			msgs, pg.Earlier = msgs[len(msgs)-playgroundMessages:], true
		}
		if pg.Messages, err = h.messageRows(c, convs, ws, session, msgs); err != nil {
			return nil, nil, err
		}
		// The answer just given shows why at once.
		for i := len(pg.Messages) - 1; i >= 0; i-- {
			if pg.Messages[i].Role == domain.RoleAssistant {
				if pg.Messages[i].Trace != nil {
					pg.Messages[i].Trace.Open = true
				}
				break
			}
		}
		pg.Agent, pg.AgentName = conv.AgentSlug, conv.AgentSlug
	}
	if pg.Agents, err = h.workspaceAgents(c); err != nil {
		return nil, nil, err
	}
	for _, a := range pg.Agents {
		if a.Slug == pg.Agent && pg.Session != "" {
			pg.AgentName = a.Name
		}
	}
	v, err := h.newView(c, mustText("play.title"), "playground")
	if err != nil {
		return nil, nil, err
	}
	v.Data = pg
	return v, pg, nil
}

// PlaygroundPage shows the playground: an agent to pick and a question to
// ask, or the conversation going on (?session=) to follow up.
func (h *Handlers) PlaygroundPage(c *fiber.Ctx) error {
	v, _, err := h.playgroundView(c, strings.Clone(c.Query("agent")), strings.Clone(c.Query("session")), "")
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "playground", v)
}

// PlaygroundAsk asks the agent as the v2 chat does, in the member's
// workspace, waits for the whole answer, and shows the conversation again
// (303 to its page, so a reload does not ask twice). It is the form's own
// action: console.js streams the answer through PlaygroundStream instead.
func (h *Handlers) PlaygroundAsk(c *fiber.Ctx) error {
	turn, err := h.startPlayground(c)
	if turn == nil {
		return err // refused, and the page already says why (or an error)
	}
	answer, err := turn.Run(c.UserContext(), nil)
	if err != nil {
		return err
	}
	return redirect(c, Prefix+"/w/"+member(c).WorkspaceID+"/playground?session="+url.QueryEscape(answer.SessionID)+"#latest")
}

// PlaygroundStream asks as PlaygroundAsk does, with the same form, checks
// and refusals (the playground page with the field's error), but answers
// with the engine's events as Server-Sent Events while the answer is
// written: the USER message, tokens, then done or error, the v2 chat's
// stream. console.js then shows the finished page. The answer runs under
// the server's context, so a member who leaves does not stop it.
func (h *Handlers) PlaygroundStream(c *fiber.Ctx) error {
	turn, err := h.startPlayground(c)
	if turn == nil {
		return err
	}
	return sse.Answer(c, c.UserContext(), turn, true)
}

// playgroundKey is the form's idempotency key: letters, digits, "-" and
// "_", as playgroundView makes them and console.js remakes them.
var playgroundKey = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// newPlaygroundKey makes the key a playground form sends with its
// question, so the same form sent twice (a double click, a retried
// request) asks once: the engine's Idempotency-Key, as v2's chat uses it.
func newPlaygroundKey() string { return domain.NewID("pgq_") }

// startPlayground checks a playground question and starts its turn. A nil
// turn means it did not start: either the page saying why was rendered
// (err is then the render's) or err is for the error handler.
func (h *Handlers) startPlayground(c *fiber.Ctx) (Turn, error) {
	agent := strings.TrimSpace(formValue(c, "agent"))
	session := strings.TrimSpace(formValue(c, "session"))
	question := formValue(c, "question")
	key := formValue(c, "key")
	if _, err := h.conversationService(); err != nil {
		return nil, err
	}
	if h.chat == nil {
		return nil, domain.Unavailable("chat", errors.New("console built without Options.Chat"))
	}
	// The page is built only to show a refusal: an answer moves on to the
	// conversation's page. It keeps the form's key, so sending the same
	// question again after "still being answered" gets that answer.
	show := func(status int, set func(v *view, pg *playgroundPage)) error {
		v, pg, err := h.playgroundView(c, agent, session, question)
		if err != nil {
			return err
		}
		if playgroundKey.MatchString(key) {
			pg.Key = key
		}
		set(v, pg)
		return h.render(c, status, "playground", v)
	}
	refuse := func(field, msg string) error {
		return show(fiber.StatusBadRequest, func(v *view, _ *playgroundPage) {
			v.Error = mustText("form.problems")
			v.Fields = map[string]string{field: msg}
		})
	}
	// Checked here first for the page's own words; the engine checks
	// again with the same limit. A form without a key (a page from before
	// keys) asks without one; a malformed key is a tampered form.
	switch {
	case session == "" && agent == "":
		return nil, refuse("agent", mustText("play.agent.required"))
	case strings.TrimSpace(question) == "":
		return nil, refuse("question", mustText("play.question.required"))
	case utf8.RuneCountInString(question) > domain.MaxMessageLength:
		return nil, refuse("question", mustText("play.question.long", domain.MaxMessageLength))
	case key != "" && !playgroundKey.MatchString(key):
		return nil, show(fiber.StatusBadRequest, func(v *view, _ *playgroundPage) { v.Error = mustText("play.key.bad") })
	}
	ws, err := h.workspaces.GetWorkspace(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return nil, err
	}
	// Channel marks a new conversation as the playground's, so the list
	// and reports tell it from visitors'.
	req := chat.Request{Session: conversation.SessionRef{Workspace: &ws, ID: session}, Message: question, Channel: domain.ChannelPlayground}
	if key != "" {
		// Keys are unique per workspace, shared with its API clients'
		// Idempotency-Keys: the prefix keeps the two apart.
		req.IdempotencyKey = "console-playground:" + key
	}
	if session == "" {
		// The agent of a conversation going on is its own; naming one
		// would only be refused when it differs.
		req.AgentSlug = agent
	}
	turn, err := h.chat.Start(c.UserContext(), req)
	if err == nil {
		return turn, nil
	}
	var verr *domain.ValidationError
	var cf *domain.ConflictError
	switch {
	case session == "" && errors.Is(err, domain.ErrNotFound):
		return nil, refuse("agent", mustText("play.agent.unknown"))
	case errors.As(err, &verr):
		return nil, refuse("question", fieldMessage(verr))
	case errors.Is(err, domain.ErrAnswerInProgress):
		return nil, show(fiber.StatusConflict, func(v *view, _ *playgroundPage) { v.Error = mustText("play.busy") })
	case errors.As(err, &cf) && cf.Details["Idempotency-Key"] != "":
		// The key went with another question (edited after it was sent,
		// without console.js): a new key asks this one.
		return nil, show(fiber.StatusConflict, func(v *view, pg *playgroundPage) {
			v.Error, pg.Key = mustText("play.key.reused"), newPlaygroundKey()
		})
	case errors.As(err, &cf):
		return nil, show(fiber.StatusConflict, func(v *view, _ *playgroundPage) { v.Error = cf.Message })
	}
	return nil, err
}
