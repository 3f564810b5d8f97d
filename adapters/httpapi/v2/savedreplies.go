package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/savedreply"
)

// SavedReplyHandlers serve /api/v2/saved-replies.
type SavedReplyHandlers struct {
	replies SavedReplies
	decoder *wire.Decoder
}

// NewSavedReplyHandlers returns the saved reply handlers.
func NewSavedReplyHandlers(replies SavedReplies, decoder *wire.Decoder) *SavedReplyHandlers {
	return &SavedReplyHandlers{replies: replies, decoder: decoder}
}

type savedReplyDTO struct {
	ID        string  `json:"id"`
	Shortcut  string  `json:"shortcut"`
	Title     string  `json:"title"`
	Body      string  `json:"body"`
	CreatedBy *string `json:"createdBy"`
	CreatedAt string  `json:"createdAt"`
	UpdatedAt string  `json:"updatedAt"`
}

func toSavedReplyDTO(r domain.SavedReply) savedReplyDTO {
	return savedReplyDTO{
		ID: r.ID, Shortcut: r.Shortcut, Title: r.Title, Body: r.Body, CreatedBy: wire.OptionalString(r.CreatedBy),
		CreatedAt: wire.Time(r.CreatedAt), UpdatedAt: wire.Time(r.UpdatedAt),
	}
}

// The domain validates the fields and names them by these wire names.
type savedReplyCreate struct {
	Shortcut string `json:"shortcut"`
	Title    string `json:"title"`
	Body     string `json:"body"`
}

type savedReplyUpdate struct {
	Shortcut *string `json:"shortcut"`
	Title    *string `json:"title"`
	Body     *string `json:"body"`
}

func keyActor(c *fiber.Ctx) savedreply.Actor { return savedreply.APIKeyActor(workspaceID(c)) }

// List serves GET /api/v2/saved-replies, in shortcut order; q keeps the
// replies whose shortcut or title starts with it.
func (h *SavedReplyHandlers) List(c *fiber.Ctx) error {
	prefix := strings.Clone(c.Query("q"))
	scope := "saved-replies|q=" + prefix
	limit, after, err := wire.KeyPage(c, scope, func(key string) bool { return domain.ValidateSavedReplyShortcut(key) == nil })
	if err != nil {
		return err
	}
	page, err := h.replies.List(c.UserContext(), keyActor(c), savedreply.ListRequest{Prefix: prefix, AfterShortcut: after, Limit: limit})
	if err != nil {
		return err
	}
	return c.JSON(wire.NewKeyList(page, scope, toSavedReplyDTO))
}

// Create serves POST /api/v2/saved-replies.
func (h *SavedReplyHandlers) Create(c *fiber.Ctx) error {
	var body savedReplyCreate
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	r, err := h.replies.Create(c.UserContext(), keyActor(c), savedreply.Draft{Shortcut: body.Shortcut, Title: body.Title, Body: body.Body})
	if err != nil {
		return err
	}
	c.Location("/api/v2/saved-replies/" + r.ID)
	return c.Status(fiber.StatusCreated).JSON(toSavedReplyDTO(r))
}

// Get serves GET /api/v2/saved-replies/{id}.
func (h *SavedReplyHandlers) Get(c *fiber.Ctx) error {
	r, err := h.replies.Get(c.UserContext(), keyActor(c), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(toSavedReplyDTO(r))
}

// Update serves PATCH /api/v2/saved-replies/{id}.
func (h *SavedReplyHandlers) Update(c *fiber.Ctx) error {
	var body savedReplyUpdate
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	r, err := h.replies.Update(c.UserContext(), keyActor(c), strings.Clone(c.Params("id")),
		savedreply.Patch{Shortcut: body.Shortcut, Title: body.Title, Body: body.Body})
	if err != nil {
		return err
	}
	return c.JSON(toSavedReplyDTO(r))
}

// Delete serves DELETE /api/v2/saved-replies/{id}.
func (h *SavedReplyHandlers) Delete(c *fiber.Ctx) error {
	if err := h.replies.Delete(c.UserContext(), keyActor(c), strings.Clone(c.Params("id"))); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
