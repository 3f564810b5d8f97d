package console

import (
	"errors"
	"html"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/domain"
)

// The agent pages need domain.PermAgents (owners and admins). Helpers (the
// agent role) have no access to them: an agent's prompt, model, widget and
// allowed origins are settings, and PRODUCT.md gives helpers none; they
// will reach published agents through the playground instead.

// maxListedAgents bounds the agents list page; a workspace with more is
// far beyond what anyone configures by hand.
const maxListedAgents = 500

// workspaceAgents lists the workspace's agents, up to maxListedAgents, for
// the agent and knowledge lists and the conversation pickers.
func (h *Handlers) workspaceAgents(c *fiber.Ctx) ([]domain.Agent, error) {
	var all []domain.Agent
	page := domain.PageRequest{Limit: 100}
	for {
		p, err := h.agents.List(c.UserContext(), member(c).WorkspaceID, page)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Items...)
		if !p.HasMore || p.Next == nil || len(all) >= maxListedAgents {
			return all, nil
		}
		page.After = p.Next
	}
}

// AgentsPage lists the workspace's agents.
func (h *Handlers) AgentsPage(c *fiber.Ctx) error {
	v, err := h.newView(c, mustText("agents.title"), "agents")
	if err != nil {
		return err
	}
	all, err := h.workspaceAgents(c)
	if err != nil {
		return err
	}
	v.Data = all
	return h.render(c, fiber.StatusOK, "agents", v)
}

// agentForm is the agent form's fields as typed, so a refused form shows
// again with what was entered. Names match the domain's field names, so
// validation messages land next to their fields.
type agentForm struct {
	Slug, Name, SystemPrompt, WelcomeMessage, SuggestedQuestions, FallbackMessage string
	Model, BlockedTopics, RetrievalTopK, RetrievalThreshold                       string
	PrimaryColor, AvatarURL, AllowedOrigins                                       string
}

func formOf(a domain.Agent) agentForm {
	return agentForm{
		Slug: a.Slug, Name: a.Name, SystemPrompt: a.Config.SystemPrompt, WelcomeMessage: a.Config.WelcomeMessage,
		SuggestedQuestions: strings.Join(a.Config.SuggestedQuestions, "\n"), FallbackMessage: a.Config.FallbackMessage,
		Model: a.Config.Model, BlockedTopics: strings.Join(a.Config.BlockedTopics, "\n"),
		RetrievalTopK:      strconv.Itoa(a.Config.RetrievalTopK),
		RetrievalThreshold: strconv.FormatFloat(a.Config.RetrievalThreshold, 'f', -1, 64),
		PrimaryColor:       a.Config.EffectivePrimaryColor(), AvatarURL: a.Config.AvatarURL,
		AllowedOrigins: strings.Join(a.Config.AllowedOrigins, "\n"),
	}
}

func readAgentForm(c *fiber.Ctx) agentForm {
	v := func(name string) string { return formValue(c, name) }
	return agentForm{
		Slug: strings.TrimSpace(v("slug")), Name: v("name"), SystemPrompt: v("systemPrompt"), WelcomeMessage: v("welcomeMessage"),
		SuggestedQuestions: v("suggestedQuestions"), FallbackMessage: v("fallbackMessage"), Model: v("model"),
		BlockedTopics: v("blockedTopics"), RetrievalTopK: strings.TrimSpace(v("retrievalTopK")),
		RetrievalThreshold: strings.TrimSpace(v("retrievalThreshold")), PrimaryColor: v("primaryColor"),
		AvatarURL: v("avatarUrl"), AllowedOrigins: v("allowedOrigins"),
	}
}

// patch turns the form into a patch of every field. Numbers that do not
// parse are validation errors on their fields.
func (f agentForm) patch() (agent.Patch, error) {
	topK := domain.DefaultRetrievalTopK
	if f.RetrievalTopK != "" {
		n, err := formCount(f.RetrievalTopK, "retrievalTopK", domain.MaxRetrievalTopK)
		if err != nil {
			return agent.Patch{}, err
		}
		topK = n
	}
	threshold := domain.DefaultRetrievalThreshold
	if f.RetrievalThreshold != "" {
		x, err := strconv.ParseFloat(f.RetrievalThreshold, 64)
		if err != nil {
			return agent.Patch{}, domain.InvalidField("retrievalThreshold", mustText("agents.bad.number"))
		}
		threshold = x
	}
	questions, topics, origins := lines(f.SuggestedQuestions), lines(f.BlockedTopics), lines(f.AllowedOrigins)
	return agent.Patch{
		Name: &f.Name, SystemPrompt: &f.SystemPrompt, WelcomeMessage: &f.WelcomeMessage,
		SuggestedQuestions: &questions, FallbackMessage: &f.FallbackMessage, Model: &f.Model,
		BlockedTopics: &topics, RetrievalTopK: &topK, RetrievalThreshold: &threshold,
		PrimaryColor: &f.PrimaryColor, AvatarURL: &f.AvatarURL, AllowedOrigins: &origins,
	}, nil
}

// lines splits a textarea into its non-blank lines: a blank line between
// entries is layout, not an entry.
func lines(s string) []string {
	out := []string{}
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

type agentPage struct {
	Form  agentForm
	Agent *domain.Agent
	// Snippet is the embed code; PreviewURL the widget page for the
	// preview frame ("" for an unpublished agent, which does not answer).
	Snippet, PreviewURL, PreviewNote string
}

// NewAgentPage shows the empty agent form.
func (h *Handlers) NewAgentPage(c *fiber.Ctx) error {
	v, err := h.newView(c, mustText("agents.new"), "agents")
	if err != nil {
		return err
	}
	v.Data = agentPage{Form: formOf(domain.Agent{Config: domain.AgentConfig{
		RetrievalTopK: domain.DefaultRetrievalTopK, RetrievalThreshold: domain.DefaultRetrievalThreshold,
	}})}
	return h.render(c, fiber.StatusOK, "agent-new", v)
}

// CreateAgent stores a new, unpublished agent.
func (h *Handlers) CreateAgent(c *fiber.Ctx) error {
	f := readAgentForm(c)
	ws := member(c).WorkspaceID
	p, err := f.patch()
	if err == nil {
		a := domain.Agent{Slug: f.Slug, Name: f.Name}
		applyPatch(&a, p)
		_, err = h.agents.Create(c.UserContext(), ws, a)
	}
	if err != nil {
		v, verr := h.newView(c, mustText("agents.new"), "agents")
		if verr != nil {
			return verr
		}
		v.Data = agentPage{Form: f}
		// A taken slug is the slug field's problem: said there, in words.
		status := statusOf(err)
		if errors.Is(err, domain.ErrConflict) {
			err = domain.InvalidField("slug", mustText("agents.slug.taken"))
		}
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, status, "agent-new", v)
	}
	return redirect(c, Prefix+"/w/"+ws+"/agents/"+f.Slug+"?done=created")
}

func applyPatch(a *domain.Agent, p agent.Patch) {
	a.Config = domain.AgentConfig{
		SystemPrompt: *p.SystemPrompt, WelcomeMessage: *p.WelcomeMessage, SuggestedQuestions: *p.SuggestedQuestions,
		FallbackMessage: *p.FallbackMessage, Model: *p.Model, BlockedTopics: *p.BlockedTopics,
		RetrievalTopK: *p.RetrievalTopK, RetrievalThreshold: *p.RetrievalThreshold,
		PrimaryColor: *p.PrimaryColor, AvatarURL: *p.AvatarURL, AllowedOrigins: *p.AllowedOrigins,
	}
}

// statusOf is the status a refused form is shown again with.
func statusOf(err error) int {
	if isConflict(err) {
		return fiber.StatusConflict
	}
	return fiber.StatusBadRequest
}

// AgentPage shows an agent's settings form, embed snippet and preview.
func (h *Handlers) AgentPage(c *fiber.Ctx) error {
	a, err := h.agents.Get(c.UserContext(), member(c).WorkspaceID, c.Params("slug"))
	if err != nil {
		return err
	}
	v, err := h.agentView(c, a, formOf(a))
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "agent", v)
}

func (h *Handlers) agentView(c *fiber.Ctx, a domain.Agent, f agentForm) (*view, error) {
	v, err := h.newView(c, a.Name, "agents")
	if err != nil {
		return nil, err
	}
	addr := a.WidgetAddress()
	pg := agentPage{Form: f, Agent: &a,
		Snippet: `<iframe src="` + h.publicURL + "/chat/" + addr + `"` + "\n        title=\"" + html.EscapeString(a.Name) +
			"\"\n        style=\"width: 380px; height: 600px; border: 0; border-radius: 12px\"></iframe>",
	}
	// The widget page always lets its own origin frame it ('self' in its
	// frame-ancestors, whatever the allowed origins), so the preview
	// works for every published agent.
	if a.Config.Published {
		pg.PreviewURL = "/chat/" + addr
	} else {
		pg.PreviewNote = mustText("agents.preview.draft")
	}
	v.Data = pg
	return v, nil
}

// UpdateAgent saves every field of the settings form.
func (h *Handlers) UpdateAgent(c *fiber.Ctx) error {
	ws, slug := member(c).WorkspaceID, strings.Clone(c.Params("slug"))
	f := readAgentForm(c)
	p, err := f.patch()
	if err == nil {
		_, err = h.agents.Update(c.UserContext(), ws, slug, p)
	}
	if err == nil {
		return redirect(c, Prefix+"/w/"+ws+"/agents/"+slug+"?done=saved")
	}
	a, gerr := h.agents.Get(c.UserContext(), ws, slug)
	if gerr != nil {
		return gerr
	}
	f.Slug = a.Slug
	v, verr := h.agentView(c, a, f)
	if verr != nil {
		return verr
	}
	if ferr := formError(v, err); ferr != nil {
		return ferr
	}
	return h.render(c, statusOf(err), "agent", v)
}

// PublishAgent and UnpublishAgent switch whether the agent answers on its
// widget and the public channels.
func (h *Handlers) PublishAgent(c *fiber.Ctx) error   { return h.setPublished(c, true) }
func (h *Handlers) UnpublishAgent(c *fiber.Ctx) error { return h.setPublished(c, false) }

func (h *Handlers) setPublished(c *fiber.Ctx, published bool) error {
	ws, slug := member(c).WorkspaceID, strings.Clone(c.Params("slug"))
	if _, err := h.agents.Update(c.UserContext(), ws, slug, agent.Patch{Published: &published}); err != nil {
		return err
	}
	done := "unpublished"
	if published {
		done = "published"
	}
	return redirect(c, Prefix+"/w/"+ws+"/agents/"+slug+"?done="+done)
}

// DeleteAgentPage asks to confirm the deletion.
func (h *Handlers) DeleteAgentPage(c *fiber.Ctx) error {
	a, err := h.agents.Get(c.UserContext(), member(c).WorkspaceID, c.Params("slug"))
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("agents.delete.title", a.Name), "agents")
	if err != nil {
		return err
	}
	v.Data = a
	return h.render(c, fiber.StatusOK, "agent-delete", v)
}

// DeleteAgent deletes the agent with its knowledge.
func (h *Handlers) DeleteAgent(c *fiber.Ctx) error {
	ws := member(c).WorkspaceID
	if err := h.agents.Delete(c.UserContext(), ws, c.Params("slug")); err != nil {
		return err
	}
	return redirect(c, Prefix+"/w/"+ws+"/agents?done=deleted")
}
