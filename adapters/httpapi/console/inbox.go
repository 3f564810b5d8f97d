package console

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/inbox"
	"github.com/conciergehq/concierge/core/savedreply"
)

// The inbox is where members answer the conversations the agent handed to
// a person: the views (inbox.Service), a thread with its transcript (the
// conversation pages' Get and "transcript" template), the composer
// (handoff's reply and note), ownership (assignment) and status. It needs
// domain.PermConversations, like the conversation pages: owners, admins
// and agents all work the inbox. Every POST answers with a redirect to the
// thread (PRG) or, when refused, the thread again with the reason.
// Without JavaScript every page works by reload; inbox.js adds the live
// updates from the workspace event stream and the composer's "/" list.

const (
	inboxPageSize = 25
	// threadPageSize is a thread's page of messages: the most a page
	// request allows, so nearly every thread is one page.
	threadPageSize = domain.MaxPageLimit
	// savedRepliesInPage is how many saved replies the composer's "/" list
	// gets with the page (the store's largest page).
	savedRepliesInPage = domain.MaxPageLimit
)

// inboxService is the inbox use case, or 503 when the console was built
// without it.
func (h *Handlers) inboxService() (Inbox, error) {
	if h.inbox == nil {
		return nil, domain.Unavailable("inbox service", errors.New("console built without Options.Inbox"))
	}
	return h.inbox, nil
}

// InboxHome sends the member to the inbox of their workspace, or lets them
// pick one, as Home does.
func (h *Handlers) InboxHome(c *fiber.Ctx) error {
	links, err := h.workspaceLinks(c.UserContext(), principal(c).User.ID)
	if err != nil {
		return err
	}
	if len(links) == 1 {
		return redirect(c, Prefix+"/w/"+links[0].ID+"/inbox")
	}
	v, err := h.newView(c, mustText("inbox.picker"), "")
	if err != nil {
		return err
	}
	v.Data = links
	return h.render(c, fiber.StatusOK, "inbox-picker", v)
}

// inboxTab is one view's tab.
type inboxTab struct {
	View         domain.InboxView
	Label, Count string
	// CountText is the count in words, for screen readers.
	CountText string
	Href      string
	Current   bool
}

// inboxRow is a conversation as the inbox lists it.
type inboxRow struct {
	conversationRow
	Contact, Waiting, Assignee string
	// WaitingISO and WaitingTitle are the time Waiting counts from: the
	// handoff request for a conversation waiting for a person, the last
	// activity for the others.
	WaitingISO, WaitingTitle string
}

// waitingSince says how long the conversation has waited at now. One
// that asked for a person has waited since the request ("waiting 12
// min"), however much the visitor wrote since; the others show how long
// ago something last happened.
func waitingSince(c domain.Conversation, now time.Time) (text, iso, title string) {
	if c.Status == domain.StatusHandoffRequested && !c.HandoffRequestedAt.IsZero() {
		at := c.HandoffRequestedAt.UTC()
		return mustText("inbox.waiting", waitText(now.Sub(at))), at.Format(time.RFC3339),
			mustText("inbox.requested.at", at.Format("2006-01-02 15:04 UTC"))
	}
	at := c.LastActivityAt.UTC()
	return waitText(now.Sub(at)), at.Format(time.RFC3339), at.Format("2006-01-02 15:04 UTC")
}

type inboxPage struct {
	Tabs  []inboxTab
	Items []inboxRow
	View  domain.InboxView
	// Agents fill the agent filter; Agent and Q are the filter as asked.
	Agents   []domain.Agent
	Agent, Q string
	Next     string
	// QueryMin and QueryMax bound the search box.
	QueryMin, QueryMax int
	Filtered           bool
	// Events is the workspace event stream inbox.js listens to.
	Events string
}

// countText is a tab's count: "999+" from the cap on.
func countText(n int) string {
	if n >= domain.InboxCountCap {
		return strconv.Itoa(domain.InboxCountCap-1) + "+"
	}
	return strconv.Itoa(n)
}

// waitText is how long someone has waited, in the words a person reads at
// a glance: "just now", "12 min", "2 h", "3 h 5 min", "2 days".
func waitText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return mustText("inbox.wait.now")
	case d < time.Hour:
		return mustText("inbox.wait.min", int(d/time.Minute))
	case d < 24*time.Hour && d%time.Hour < time.Minute:
		return mustText("inbox.wait.hour", int(d/time.Hour))
	case d < 24*time.Hour:
		return mustText("inbox.wait.hours", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		return mustText("inbox.wait.days", int(d/(24*time.Hour)))
	}
}

// contactText names the visitor: the name they gave, their email, or
// "Visitor".
func contactText(c domain.Conversation) string {
	switch {
	case c.ContactName != "":
		return c.ContactName
	case c.ContactEmail != "":
		return c.ContactEmail
	}
	return mustText("msg.role.USER")
}

// teammateNames maps the workspace's members' user ids to their names.
func (h *Handlers) teammateNames(c *fiber.Ctx, in Inbox) (map[string]string, []domain.Member, error) {
	mates, err := in.Teammates(c.UserContext(), member(c))
	if err != nil {
		return nil, nil, err
	}
	names := make(map[string]string, len(mates))
	for _, m := range mates {
		names[m.UserID] = memberName(m)
	}
	return names, mates, nil
}

func memberName(m domain.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return m.Email
}

// InboxPage lists one view of the inbox with every view's count, filtered
// by agent and searched as the conversation list is, paged by cursors
// bound to the view and filters.
func (h *Handlers) InboxPage(c *fiber.Ctx) error {
	in, err := h.inboxService()
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("inbox.title"), "inbox")
	if err != nil {
		return err
	}
	m := member(c)
	ws := m.WorkspaceID
	query := func(name string) string { return strings.TrimSpace(strings.Clone(c.Query(name))) }
	pg := &inboxPage{View: domain.InboxView(query("view")), Agent: query("agent"), Q: query("q"),
		QueryMin: domain.MinConversationQueryLength, QueryMax: domain.MaxConversationQueryLength,
		Events: Prefix + "/w/" + ws + "/inbox/events"}
	if pg.View == "" {
		pg.View = domain.InboxNeeds
	}
	pg.Filtered = pg.Agent != "" || pg.Q != ""
	v.Data = pg
	base := Prefix + "/w/" + ws + "/inbox"
	// A conversation id typed into the search box opens its thread, as on
	// the Conversations page (the box's hint says so). Get scopes by
	// workspace: another workspace's id is searched as text, finding none.
	if domain.ValidID(domain.PrefixSession, pg.Q) {
		convs, err := h.conversationService()
		if err != nil {
			return err
		}
		if _, _, err := convs.Get(c.UserContext(), ws, pg.Q, domain.PageRequest{Limit: 1}); err == nil {
			return redirect(c, base+"/"+pg.Q)
		} else if !errors.Is(err, domain.ErrNotFound) {
			return err
		}
	}
	if pg.Agents, err = h.workspaceAgents(c); err != nil {
		return err
	}
	filters := url.Values{}
	for name, value := range map[string]string{"agent": pg.Agent, "q": pg.Q} {
		if value != "" {
			filters.Set(name, value)
		}
	}
	for _, view := range domain.InboxViews {
		link := url.Values{"view": {string(view)}}
		for k, vs := range filters {
			link[k] = vs
		}
		pg.Tabs = append(pg.Tabs, inboxTab{View: view, Label: mustText("inbox.view." + string(view)),
			Href: base + "?" + link.Encode(), Current: view == pg.View})
	}
	if !pg.View.Valid() {
		v.Error = mustText("form.problems")
		v.Fields = map[string]string{"view": mustText("inbox.view.bad")}
		pg.View = ""
		return h.render(c, fiber.StatusBadRequest, "inbox", v)
	}
	// The cursor is bound to the view and the filters.
	scope := "console-inbox|" + string(pg.View) + "|" + filters.Encode()
	page, err := wire.Page(c, scope, domain.PrefixSession)
	var got domain.Page[domain.Conversation]
	var counts domain.InboxCounts
	if err == nil {
		page.Limit = inboxPageSize
		got, err = in.List(c.UserContext(), m, inbox.Request{View: pg.View, AgentSlug: pg.Agent, Query: pg.Q}, page)
	}
	if err == nil {
		counts, err = in.Counts(c.UserContext(), m, pg.Agent)
	}
	if err != nil {
		if pg.Agent != "" && errors.Is(err, domain.ErrNotFound) {
			err = domain.InvalidField("agent", mustText("convs.agent.unknown"))
		}
		var verr *domain.ValidationError
		if errors.As(err, &verr) && verr.Fields["q"] != "" {
			err = domain.InvalidField("q", mustText("convs.q.bad", domain.MinConversationQueryLength, domain.MaxConversationQueryLength))
		}
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "inbox", v)
	}
	for i := range pg.Tabs {
		pg.Tabs[i].Count = countText(counts[pg.Tabs[i].View])
		pg.Tabs[i].CountText = mustText("inbox.count", pg.Tabs[i].Count)
	}
	names, _, err := h.teammateNames(c, in)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, x := range got.Items {
		r := inboxRow{conversationRow: conversationRow{Conversation: x, Path: base + "/" + x.ID,
			StatusText: mustText("convs.status." + string(x.Status)), Playground: x.Channel == domain.ChannelPlayground,
			Activity: x.LastActivityAt.UTC().Format("2006-01-02 15:04 UTC"), ActivityISO: x.LastActivityAt.UTC().Format("2006-01-02T15:04:05Z")},
			Contact: contactText(x)}
		r.Waiting, r.WaitingISO, r.WaitingTitle = waitingSince(x, now)
		if x.AssigneeID != "" {
			r.Assignee = names[x.AssigneeID]
			if r.Assignee == "" {
				r.Assignee = mustText("inbox.assignee.former")
			}
		}
		pg.Items = append(pg.Items, r)
	}
	list := wire.NewList(got, scope, func(x domain.Conversation) domain.Conversation { return x })
	if list.Meta.NextCursor != nil {
		link := url.Values{"view": {string(pg.View)}}
		for k, vs := range filters {
			link[k] = vs
		}
		pg.Next = base + "?" + link.Encode() + "&cursor=" + url.QueryEscape(*list.Meta.NextCursor)
	}
	return h.render(c, fiber.StatusOK, "inbox", v)
}

// savedReplyItem is a saved reply as the composer's "/" list reads it
// (a hidden list in the page, read by inbox.js).
type savedReplyItem struct {
	Shortcut, Title, Body string
}

type threadPage struct {
	Conversation conversationRow
	Contact      string
	Messages     []messageRow
	// Next is the URL of the next page of messages; Later says this is not
	// the first page.
	Next  string
	Later bool
	// Assignee is the owner's name, "" when nobody owns it; Mine says the
	// member viewing it does.
	Assignee  string
	Mine      bool
	Teammates []domain.Member
	Earlier   []inboxRow
	Replies   []savedReplyItem
	// Content and Kind are the composer's values, kept when a post is
	// refused; MaxContent bounds the text.
	Content, Kind string
	MaxContent    int
	// What the ownership bar offers.
	CanResolve, CanReopen, CanHandBack bool
	// Path is the thread's URL; Events the workspace event stream;
	// Suggest the "Suggest a reply" endpoint.
	Path, Events, Suggest string
	// Requested and RequestedISO say when the visitor last asked for a
	// person; empty when they never did.
	Requested, RequestedISO string
}

// threadView builds a thread's page; a refused post renders it again
// with its error.
func (h *Handlers) threadView(c *fiber.Ctx) (*view, *threadPage, error) {
	in, err := h.inboxService()
	if err != nil {
		return nil, nil, err
	}
	convs, err := h.conversationService()
	if err != nil {
		return nil, nil, err
	}
	m := member(c)
	ws, id := m.WorkspaceID, strings.Clone(c.Params("conversationID"))
	scope := "console-thread|" + id
	page := domain.PageRequest{}
	if c.Method() == fiber.MethodGet {
		if page, err = wire.Page(c, scope, domain.PrefixMessage); err != nil {
			return nil, nil, err
		}
	}
	page.Limit = threadPageSize
	conv, msgs, err := convs.Get(c.UserContext(), ws, id, page)
	if err != nil {
		return nil, nil, err
	}
	rows, err := h.messageRows(c, convs, ws, id, msgs.Items)
	if err != nil {
		return nil, nil, err
	}
	if conv.Channel != domain.ChannelPlayground {
		h.improveLinks(c, conv.AgentSlug, id, rows)
	}
	base := Prefix + "/w/" + ws + "/inbox/"
	pg := &threadPage{Messages: rows, Later: page.After != nil, Contact: contactText(conv), Kind: "reply",
		MaxContent: domain.MaxMessageLength, Path: base + id, Events: Prefix + "/w/" + ws + "/inbox/events",
		Suggest: base + id + "/suggestion", Mine: conv.AssigneeID == m.UserID,
		CanResolve:  conv.Status != domain.StatusResolved,
		CanReopen:   conv.Status == domain.StatusResolved,
		CanHandBack: conv.Status == domain.StatusHuman || conv.Status == domain.StatusHandoffRequested,
		Conversation: conversationRow{Conversation: conv, StatusText: mustText("convs.status." + string(conv.Status)), Playground: conv.Channel == domain.ChannelPlayground,
			Activity: conv.LastActivityAt.UTC().Format("2006-01-02 15:04 UTC"), ActivityISO: conv.LastActivityAt.UTC().Format("2006-01-02T15:04:05Z")}}
	if at := conv.HandoffRequestedAt.UTC(); !conv.HandoffRequestedAt.IsZero() {
		pg.Requested, pg.RequestedISO = at.Format("2006-01-02 15:04 UTC"), at.Format(time.RFC3339)
		if conv.Status == domain.StatusHandoffRequested {
			pg.Requested += " (" + mustText("inbox.waiting", waitText(time.Since(at))) + ")"
		}
	}
	list := wire.NewList(msgs, scope, func(m domain.Message) domain.Message { return m })
	if list.Meta.NextCursor != nil {
		pg.Next = pg.Path + "?cursor=" + url.QueryEscape(*list.Meta.NextCursor)
	}
	names, mates, err := h.teammateNames(c, in)
	if err != nil {
		return nil, nil, err
	}
	pg.Teammates = mates
	if conv.AssigneeID != "" {
		if pg.Assignee = names[conv.AssigneeID]; pg.Assignee == "" {
			pg.Assignee = mustText("inbox.assignee.former")
		}
	}
	earlier, err := in.Earlier(c.UserContext(), m, conv)
	if err != nil {
		return nil, nil, err
	}
	for _, x := range earlier {
		pg.Earlier = append(pg.Earlier, inboxRow{conversationRow: conversationRow{Conversation: x, Path: base + x.ID,
			StatusText: mustText("convs.status." + string(x.Status)),
			Activity:   x.LastActivityAt.UTC().Format("2006-01-02 15:04 UTC"), ActivityISO: x.LastActivityAt.UTC().Format("2006-01-02T15:04:05Z")},
			Contact: contactText(x)})
	}
	if h.savedReplies != nil {
		replies, err := h.savedReplies.Search(c.UserContext(), savedreply.MemberActor(m), "", savedRepliesInPage)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range replies {
			pg.Replies = append(pg.Replies, savedReplyItem{Shortcut: r.Shortcut, Title: r.Title, Body: r.Body})
		}
	}
	v, err := h.newView(c, mustText("inbox.thread", pg.Contact), "inbox")
	if err != nil {
		return nil, nil, err
	}
	v.Data = pg
	return v, pg, nil
}

// ThreadPage shows a conversation in the inbox: the transcript with notes,
// the contact and their earlier conversations, ownership and the composer.
func (h *Handlers) ThreadPage(c *fiber.Ctx) error {
	v, _, err := h.threadView(c)
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "thread", v)
}

// refuseThread renders the thread again with a refusal: a validation
// error's fields, a conflict's message, or msg when set.
func (h *Handlers) refuseThread(c *fiber.Ctx, status int, err error, msg string, keep func(*threadPage)) error {
	v, pg, verr := h.threadView(c)
	if verr != nil {
		return verr
	}
	if keep != nil {
		keep(pg)
	}
	if msg != "" {
		v.Error = msg
	} else if ferr := formError(v, err); ferr != nil {
		return ferr
	}
	return h.render(c, status, "thread", v)
}

// threadWorkspace reads the workspace an action applies to (its plan and
// delivery settings).
func (h *Handlers) threadWorkspace(c *fiber.Ctx) (*domain.Workspace, string, error) {
	ws, err := h.workspaces.GetWorkspace(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return nil, "", err
	}
	return &ws, strings.Clone(c.Params("conversationID")), nil
}

// afterThreadAction redirects to the thread with a notice, or renders the
// refusal: 400 for bad input, 409 for a conflict, the error page for the
// rest (404, 403 plan).
func (h *Handlers) afterThreadAction(c *fiber.Ctx, err error, done string, keep func(*threadPage)) error {
	var verr *domain.ValidationError
	switch {
	case err == nil:
		ws, id := member(c).WorkspaceID, strings.Clone(c.Params("conversationID"))
		return redirect(c, Prefix+"/w/"+ws+"/inbox/"+id+"?done="+done)
	case errors.As(err, &verr):
		return h.refuseThread(c, fiber.StatusBadRequest, err, "", keep)
	case isConflict(err):
		return h.refuseThread(c, fiber.StatusConflict, err, "", keep)
	}
	return err
}

// PostThreadMessage sends a reply to the visitor or writes an internal
// note (form: content, kind=reply|note).
func (h *Handlers) PostThreadMessage(c *fiber.Ctx) error {
	if h.composer == nil {
		return domain.Unavailable("composer", errors.New("console built without Options.Composer"))
	}
	content, kind := formValue(c, "content"), formValue(c, "kind")
	keep := func(pg *threadPage) { pg.Content, pg.Kind = content, kind }
	role := domain.RoleHuman
	switch kind {
	case "reply":
	case "note":
		role = domain.RoleNote
	default:
		return h.afterThreadAction(c, domain.InvalidField("kind", mustText("inbox.kind.bad")), "", keep)
	}
	if err := domain.ValidateMessageText(content, domain.MaxMessageLength); err != nil {
		var verr *domain.ValidationError
		if errors.As(err, &verr) {
			msg := mustText("inbox.content.empty")
			if strings.TrimSpace(content) != "" {
				msg = mustText("inbox.content.long", domain.MaxMessageLength)
			}
			err = domain.InvalidField("content", msg)
		}
		return h.afterThreadAction(c, err, "", keep)
	}
	ws, id, err := h.threadWorkspace(c)
	if err != nil {
		return err
	}
	p := principal(c)
	author := p.User.Name
	if author == "" {
		author = p.User.Email
	}
	_, err = h.composer.PostHumanMessage(c.UserContext(), ws, id, handoff.HumanMessage{Role: string(role), Content: content, AuthorName: author, AuthorID: p.User.ID})
	done := "sent"
	if role == domain.RoleNote {
		done = "noted"
	}
	return h.afterThreadAction(c, err, done, keep)
}

// TakeOver gives the conversation to the member and moves it to HUMAN.
// When another member was quicker, the thread says who.
func (h *Handlers) TakeOver(c *fiber.Ctx) error {
	if h.ownership == nil {
		return domain.Unavailable("ownership", errors.New("console built without Options.Ownership"))
	}
	ws, id, err := h.threadWorkspace(c)
	if err != nil {
		return err
	}
	_, err = h.ownership.TakeOver(c.UserContext(), ws, id, member(c))
	var cf *domain.ConflictError
	if errors.As(err, &cf) && cf.Details["assigneeId"] != "" {
		name := mustText("inbox.assignee.someone")
		if in, ierr := h.inboxService(); ierr == nil {
			if names, _, nerr := h.teammateNames(c, in); nerr == nil && names[cf.Details["assigneeId"]] != "" {
				name = names[cf.Details["assigneeId"]]
			}
		}
		return h.refuseThread(c, fiber.StatusConflict, err, mustText("inbox.taken.other", name), nil)
	}
	return h.afterThreadAction(c, err, "taken", nil)
}

// SetAssignee assigns the conversation to a member (form: assigneeId), or
// to nobody when it is empty.
func (h *Handlers) SetAssignee(c *fiber.Ctx) error {
	if h.ownership == nil {
		return domain.Unavailable("ownership", errors.New("console built without Options.Ownership"))
	}
	ws, id, err := h.threadWorkspace(c)
	if err != nil {
		return err
	}
	actor := member(c)
	assignee := strings.TrimSpace(formValue(c, "assigneeId"))
	if assignee == "" {
		_, err = h.ownership.Unassign(c.UserContext(), ws, id, &actor)
		return h.afterThreadAction(c, err, "unassigned", nil)
	}
	if !domain.ValidID(domain.PrefixUser, assignee) {
		return h.afterThreadAction(c, domain.InvalidField("assigneeId", mustText("inbox.assignee.bad")), "", nil)
	}
	_, err = h.ownership.Assign(c.UserContext(), ws, id, assignee, &actor)
	var verr *domain.ValidationError
	if errors.As(err, &verr) && verr.Fields["assigneeId"] != "" {
		err = domain.InvalidField("assigneeId", mustText("inbox.assignee.bad"))
	}
	return h.afterThreadAction(c, err, "assigned", nil)
}

// threadStatuses are the moves the thread offers, with their notices:
// resolve, reopen (to a person), hand back to the agent.
var threadStatuses = map[domain.ConversationStatus]string{
	domain.StatusResolved: "resolved", domain.StatusHuman: "reopened", domain.StatusAI: "handedback",
}

// SetThreadStatus moves the conversation (form: status=RESOLVED|HUMAN|AI).
func (h *Handlers) SetThreadStatus(c *fiber.Ctx) error {
	if h.composer == nil {
		return domain.Unavailable("composer", errors.New("console built without Options.Composer"))
	}
	to := domain.ConversationStatus(formValue(c, "status"))
	done, ok := threadStatuses[to]
	if !ok {
		return h.afterThreadAction(c, domain.InvalidField("status", mustText("inbox.status.bad")), "", nil)
	}
	ws, id, err := h.threadWorkspace(c)
	if err != nil {
		return err
	}
	_, err = h.composer.SetStatus(c.UserContext(), ws, id, to)
	var cf *domain.ConflictError
	if errors.As(err, &cf) {
		return h.refuseThread(c, fiber.StatusConflict, err, mustText("inbox.status.refused"), nil)
	}
	return h.afterThreadAction(c, err, done, nil)
}
