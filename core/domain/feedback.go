package domain

import (
	"strings"
	"time"
)

// Rating is a visitor's verdict on an answer.
type Rating string

// Ratings.
const (
	RatingUp   Rating = "up"
	RatingDown Rating = "down"
)

// MaxFeedbackCommentLength bounds a feedback comment, in characters.
const MaxFeedbackCommentLength = 1000

// Feedback is what a visitor said about an ASSISTANT message.
type Feedback struct {
	Rating    Rating
	Comment   string
	UpdatedAt time.Time
}

// NewFeedback checks a rating and its comment. rating "" clears the
// feedback (nil, nil); a comment then would be lost, so it is refused.
func NewFeedback(rating, comment string, now time.Time) (*Feedback, error) {
	comment = strings.TrimSpace(comment)
	if err := ValidateText("comment", comment); err != nil {
		return nil, err
	}
	if len([]rune(comment)) > MaxFeedbackCommentLength {
		return nil, InvalidField("comment", "must be at most 1000 characters")
	}
	switch Rating(rating) {
	case "":
		if comment != "" {
			return nil, InvalidField("comment", "needs a rating; a null rating clears the feedback")
		}
		return nil, nil
	case RatingUp, RatingDown:
		return &Feedback{Rating: Rating(rating), Comment: comment, UpdatedAt: now}, nil
	}
	return nil, InvalidField("rating", "must be up, down or null")
}

// ErrFeedbackNotAnswer refuses feedback on a message the agent did not
// write: visitors rate answers, not questions, human replies or notices.
var ErrFeedbackNotAnswer = &ValidationError{
	Message: "feedback is only for answers",
	Fields:  map[string]string{"messageId": "feedback is only for answers"},
}

// RatedAnswer is an answer with its feedback, as the feedback list shows it.
type RatedAnswer struct {
	MessageID      string
	ConversationID string
	AgentSlug      string
	Content        string
	Feedback       Feedback
}

// FeedbackFilter narrows the feedback list; empty values match all.
type FeedbackFilter struct {
	AgentID string
	Rating  Rating
}

// ParseRatingFilter checks the rating filter of the feedback list.
func ParseRatingFilter(s string) (Rating, error) {
	switch Rating(s) {
	case "", RatingUp, RatingDown:
		return Rating(s), nil
	}
	return "", InvalidField("rating", "must be up or down")
}
