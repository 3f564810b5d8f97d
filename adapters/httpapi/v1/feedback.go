package v1

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
)

// FeedbackHandlers serves the widget's ratings of answers.
type FeedbackHandlers struct {
	feedback Ratings
	decoder  *wire.Decoder
}

// NewFeedbackHandlers returns the feedback handlers.
func NewFeedbackHandlers(f Ratings, decoder *wire.Decoder) *FeedbackHandlers {
	return &FeedbackHandlers{feedback: f, decoder: decoder}
}

// feedbackRequest is the body of the feedback call. Rating is raw so that
// null (clear the feedback) and a missing rating (refused) differ.
type feedbackRequest struct {
	Rating  json.RawMessage `json:"rating"`
	Comment string          `json:"comment" validate:"max=1000"`
}

// feedbackResponse is the feedback as stored; rating null once cleared.
type feedbackResponse struct {
	MessageID string  `json:"messageId"`
	Rating    *string `json:"rating"`
	Comment   string  `json:"comment"`
	UpdatedAt string  `json:"updatedAt"`
}

// Rate serves POST /api/chat/{sessionId}/messages/{messageId}/feedback,
// whose capability is the session id.
func (h *FeedbackHandlers) Rate(c *fiber.Ctx) error {
	var body feedbackRequest
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	rating, err := parseRating(body.Rating)
	if err != nil {
		return err
	}
	messageID := strings.Clone(c.Params("messageId"))
	fb, err := h.feedback.Rate(c.UserContext(), feedback.Request{
		Session:   sessionOf(c),
		MessageID: messageID,
		Rating:    rating,
		Comment:   body.Comment,
	})
	if err != nil {
		return err
	}
	dto := wire.Feedback(fb)
	return c.JSON(feedbackResponse{MessageID: messageID, Rating: dto.Rating, Comment: dto.Comment, UpdatedAt: dto.UpdatedAt})
}

// parseRating reads the rating: "up", "down", or null ("" clears).
func parseRating(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", domain.InvalidField("rating", "is required: up, down or null")
	}
	var rating *string
	if err := json.Unmarshal(raw, &rating); err != nil {
		return "", domain.InvalidField("rating", "must be up, down or null")
	}
	if rating == nil {
		return "", nil
	}
	if *rating == "" {
		return "", domain.InvalidField("rating", "must be up, down or null")
	}
	return *rating, nil
}
