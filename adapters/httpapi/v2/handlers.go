// Package v2 serves the v2 REST API: agents, their sources, conversations,
// chat, integrations, deliveries and feedback. Its handlers are listed,
// with their paths, in adapters/httpapi/routes.go.
package v2

import (
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// AgentHandlers serves /api/v2/agents and their sources. Every route sits
// behind the API-key middleware, so a principal is always present and every
// call is scoped to its workspace.
type AgentHandlers struct {
	agents    Agents
	sources   Sources
	decoder   *wire.Decoder
	publicURL string
}

// NewAgentHandlers returns the agent and source handlers. publicURL is the
// service's public base URL (no trailing slash), for the agents' widgetUrl.
func NewAgentHandlers(agents Agents, sources Sources, decoder *wire.Decoder, publicURL string) *AgentHandlers {
	return &AgentHandlers{agents: agents, sources: sources, decoder: decoder, publicURL: publicURL}
}

// ConversationHandlers serves the reading of /api/v2/conversations.
type ConversationHandlers struct {
	conversations Conversations
}

// NewConversationHandlers returns the conversation handlers.
func NewConversationHandlers(conversations Conversations) *ConversationHandlers {
	return &ConversationHandlers{conversations: conversations}
}

func workspaceID(c *fiber.Ctx) string {
	p, _ := wire.Principal(c)
	return p.Workspace.ID
}

// List serves GET /api/v2/agents.
func (h *AgentHandlers) List(c *fiber.Ctx) error {
	const scope = "agents"
	page, err := wire.Page(c, scope, domain.PrefixAgent)
	if err != nil {
		return err
	}
	agents, err := h.agents.List(c.UserContext(), workspaceID(c), page)
	if err != nil {
		return err
	}
	return c.JSON(wire.NewList(agents, scope, toAgentDTO(h.publicURL)))
}

// Create serves POST /api/v2/agents.
func (h *AgentHandlers) Create(c *fiber.Ctx) error {
	var body agentCreate
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	published := true
	if body.Published != nil {
		published = *body.Published
	}
	threshold := domain.DefaultRetrievalThreshold
	if body.RetrievalThreshold != nil {
		threshold = *body.RetrievalThreshold
	}
	created, err := h.agents.Create(c.UserContext(), workspaceID(c), domain.Agent{
		Slug: body.Slug,
		Name: body.Name,
		Config: domain.AgentConfig{
			SystemPrompt:       body.SystemPrompt,
			WelcomeMessage:     body.WelcomeMessage,
			SuggestedQuestions: body.SuggestedQuestions,
			FallbackMessage:    body.FallbackMessage,
			Published:          published,
			Model:              body.Model,
			BlockedTopics:      body.BlockedTopics,
			RetrievalTopK:      body.RetrievalTopK,
			RetrievalThreshold: threshold,
			PrimaryColor:       body.PrimaryColor,
			AvatarURL:          body.AvatarURL,
			AllowedOrigins:     body.AllowedOrigins,
		},
	})
	if err != nil {
		return err
	}
	c.Location("/api/v2/agents/" + created.Slug)
	return c.Status(fiber.StatusCreated).JSON(agentDTOOf(created, h.publicURL))
}

// Get serves GET /api/v2/agents/{slug}.
func (h *AgentHandlers) Get(c *fiber.Ctx) error {
	a, err := h.agents.Get(c.UserContext(), workspaceID(c), strings.Clone(c.Params("slug")))
	if err != nil {
		return err
	}
	return c.JSON(agentDTOOf(a, h.publicURL))
}

// Update serves PATCH /api/v2/agents/{slug}.
func (h *AgentHandlers) Update(c *fiber.Ctx) error {
	var body agentUpdate
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	a, err := h.agents.Update(c.UserContext(), workspaceID(c), strings.Clone(c.Params("slug")), agent.Patch{
		Name:               body.Name,
		SystemPrompt:       body.SystemPrompt,
		WelcomeMessage:     body.WelcomeMessage,
		SuggestedQuestions: body.SuggestedQuestions,
		FallbackMessage:    body.FallbackMessage,
		Published:          body.Published,
		Model:              body.Model,
		BlockedTopics:      body.BlockedTopics,
		RetrievalTopK:      body.RetrievalTopK,
		RetrievalThreshold: body.RetrievalThreshold,
		PrimaryColor:       body.PrimaryColor,
		AvatarURL:          body.AvatarURL,
		AllowedOrigins:     body.AllowedOrigins,
	})
	if err != nil {
		return err
	}
	return c.JSON(agentDTOOf(a, h.publicURL))
}

// Delete serves DELETE /api/v2/agents/{slug}.
func (h *AgentHandlers) Delete(c *fiber.Ctx) error {
	if err := h.agents.Delete(c.UserContext(), workspaceID(c), strings.Clone(c.Params("slug"))); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// CreateSource serves POST /api/v2/agents/{slug}/sources (JSON, or a multipart file upload).
func (h *AgentHandlers) CreateSource(c *fiber.Ctx) error {
	slug := strings.Clone(c.Params("slug"))
	var src domain.Source
	if wire.IsMultipart(c) {
		var err error
		if src, err = fileSource(c); err != nil {
			return err
		}
	} else {
		var body sourceCreate
		if err := h.decoder.Decode(c, &body, false); err != nil {
			return err
		}
		if body.Type == string(domain.SourceFile) {
			return domain.InvalidField("file", "upload files as multipart/form-data with the fields type=file, name (optional) and file")
		}
		src = domain.Source{
			Type:     domain.SourceType(body.Type),
			Name:     body.Name,
			Content:  body.Content,
			Question: body.Question,
			Answer:   body.Answer,
			URL:      body.URL,
			MaxPages: body.MaxPages,
			MaxDepth: body.MaxDepth,
		}
	}
	created, err := h.sources.AddSource(c.UserContext(), workspaceID(c), slug, src)
	if err != nil {
		return err
	}
	c.Location("/api/v2/agents/" + slug + "/sources/" + created.ID)
	return c.Status(fiber.StatusCreated).JSON(toSourceDTO(slug)(created))
}

// GetSource serves GET /api/v2/agents/{slug}/sources/{id}.
func (h *AgentHandlers) GetSource(c *fiber.Ctx) error {
	slug := strings.Clone(c.Params("slug"))
	src, err := h.sources.GetSource(c.UserContext(), workspaceID(c), slug, strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(toSourceDTO(slug)(src))
}

// ReindexSource serves POST /api/v2/agents/{slug}/sources/{id}/reindex.
func (h *AgentHandlers) ReindexSource(c *fiber.Ctx) error {
	slug := strings.Clone(c.Params("slug"))
	src, err := h.sources.Reindex(c.UserContext(), workspaceID(c), slug, strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(toSourceDTO(slug)(src))
}

// ListSources serves GET /api/v2/agents/{slug}/sources.
func (h *AgentHandlers) ListSources(c *fiber.Ctx) error {
	slug := strings.Clone(c.Params("slug"))
	scope := "sources|" + slug
	page, err := wire.Page(c, scope, domain.PrefixSource)
	if err != nil {
		return err
	}
	sources, err := h.sources.ListSources(c.UserContext(), workspaceID(c), slug, page)
	if err != nil {
		return err
	}
	return c.JSON(wire.NewList(sources, scope, toSourceDTO(slug)))
}

// DeleteSource serves DELETE /api/v2/agents/{slug}/sources/{id}.
func (h *AgentHandlers) DeleteSource(c *fiber.Ctx) error {
	err := h.sources.DeleteSource(c.UserContext(), workspaceID(c), strings.Clone(c.Params("slug")), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// List serves GET /api/v2/conversations: filters agent, status,
// fallback, rating, q and assignee, and the report filters startedFrom,
// startedTo, outcome, fallbackReason, handedOff and timed (checked by the use
// case; days and handedOff parsed here).
func (h *ConversationHandlers) List(c *fiber.Ctx) error {
	filter := conversation.ListFilter{
		AgentSlug: strings.Clone(c.Query("agent")),
		Status:    domain.ConversationStatus(strings.Clone(c.Query("status"))),
		Fallback:  domain.FallbackFilter(strings.Clone(c.Query("fallback"))),
		Rating:    domain.Rating(strings.Clone(c.Query("rating"))),
		Query:     strings.Clone(c.Query("q")),
		Assignee:  strings.Clone(c.Query("assignee")),
	}
	scope := "conversations|agent=" + filter.AgentSlug + "|status=" + string(filter.Status)
	// The later filters join the cursor's scope only when set, so the
	// cursors of lists without them stay what they were; encoded, so a
	// query holding "|" cannot pass for another filter.
	if later := (url.Values{"fallback": {string(filter.Fallback)}, "rating": {string(filter.Rating)}, "q": {filter.Query}}); filter.Fallback != "" || filter.Rating != "" || filter.Query != "" {
		scope += "|" + later.Encode()
	}
	if filter.Assignee != "" {
		scope += "|" + url.Values{"assignee": {filter.Assignee}}.Encode()
	}
	if err := reportFilters(c, &filter); err != nil {
		return err
	}
	if filter.StartedFrom != (time.Time{}) || filter.StartedTo != (time.Time{}) || filter.Outcome != "" || filter.FallbackReason != "" || filter.HandedOff || filter.Timed != "" {
		report := wire.ConversationQuery(conversation.ListFilter{StartedFrom: filter.StartedFrom, StartedTo: filter.StartedTo,
			Outcome: filter.Outcome, FallbackReason: filter.FallbackReason, HandedOff: filter.HandedOff, Timed: filter.Timed})
		scope += "|" + report.Encode()
	}
	page, err := wire.Page(c, scope, domain.PrefixSession)
	if err != nil {
		return err
	}
	convs, err := h.conversations.List(c.UserContext(), workspaceID(c), filter, page)
	if err != nil {
		return err
	}
	return c.JSON(wire.NewList(convs, scope, toConversationDTO))
}

// reportFilters reads the report filters of a list into f (issue 18):
// the links of GET /api/v2/analytics/report.
func reportFilters(c *fiber.Ctx, f *conversation.ListFilter) error {
	var err error
	if f.StartedFrom, err = wire.Day("startedFrom", c.Query("startedFrom")); err != nil {
		return err
	}
	if f.StartedTo, err = wire.Day("startedTo", c.Query("startedTo")); err != nil {
		return err
	}
	if f.HandedOff, err = wire.HandedOff(c.Query("handedOff")); err != nil {
		return err
	}
	f.Outcome = domain.Outcome(strings.Clone(c.Query("outcome")))
	f.FallbackReason = domain.FallbackReason(strings.Clone(c.Query("fallbackReason")))
	f.Timed = domain.ReportDuration(strings.Clone(c.Query("timed")))
	return nil
}

// Get serves GET /api/v2/conversations/{id}: the conversation with a page
// of its messages.
func (h *ConversationHandlers) Get(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	scope := "messages|" + id
	page, err := wire.Page(c, scope, domain.PrefixMessage)
	if err != nil {
		return err
	}
	conv, msgs, err := h.conversations.Get(c.UserContext(), workspaceID(c), id, page)
	if err != nil {
		return err
	}
	return c.JSON(conversationWithMessagesDTO{
		conversationDTO: toConversationDTO(conv),
		Messages:        wire.NewList(msgs, scope, toMessageDTO),
	})
}
