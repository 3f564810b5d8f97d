package wire

import "github.com/conciergehq/concierge/core/domain"

// MessageDTO is the one shape of a message in every API version.
type MessageDTO struct {
	ID        string        `json:"id"`
	Role      string        `json:"role"`
	Content   string        `json:"content"`
	Citations []CitationDTO `json:"citations"`
	// AuthorName is a HUMAN reply's or a NOTE's author.
	AuthorName string `json:"authorName,omitempty"`
	// Status is, on a SYSTEM notice, the state the conversation entered.
	Status string `json:"status,omitempty"`
	// Feedback is the visitor's rating of an answer; absent when none.
	Feedback *FeedbackDTO `json:"feedback,omitempty"`
	// FallbackReason is, on an ASSISTANT fallback, why; absent on a real
	// answer. History shows an interrupted answer as such with it.
	FallbackReason string `json:"fallbackReason,omitempty"`
	CreatedAt      string `json:"createdAt"`
}

// FeedbackDTO is a visitor's rating of an answer. Rating is null only in
// the answer to a request that cleared it.
type FeedbackDTO struct {
	Rating    *string `json:"rating"`
	Comment   string  `json:"comment"`
	UpdatedAt string  `json:"updatedAt"`
}

// Feedback maps a domain feedback.
func Feedback(f domain.Feedback) FeedbackDTO {
	return FeedbackDTO{Rating: OptionalString(string(f.Rating)), Comment: f.Comment, UpdatedAt: Time(f.UpdatedAt)}
}

// CitationDTO is the one shape of a citation.
type CitationDTO struct {
	DocumentName string  `json:"documentName"`
	SourceID     string  `json:"sourceId"`
	SourceType   string  `json:"sourceType"`
	URL          *string `json:"url"`
	Snippet      string  `json:"snippet"`
	Score        float64 `json:"score"`
}

// Message maps a domain message.
func Message(m domain.Message) MessageDTO {
	dto := MessageDTO{
		ID: m.ID, Role: string(m.Role), Content: m.Content, Citations: Citations(m.Citations),
		AuthorName: m.AuthorName, Status: string(m.Status), FallbackReason: string(m.FallbackReason), CreatedAt: Time(m.CreatedAt),
	}
	if m.Feedback != nil {
		fb := Feedback(*m.Feedback)
		dto.Feedback = &fb
	}
	return dto
}

// Citations maps domain citations, never returning nil so JSON shows [].
func Citations(cs []domain.Citation) []CitationDTO {
	out := make([]CitationDTO, 0, len(cs))
	for _, c := range cs {
		out = append(out, CitationDTO{
			DocumentName: c.DocumentName,
			SourceID:     c.SourceID,
			SourceType:   string(c.SourceType),
			URL:          OptionalString(c.URL),
			Snippet:      c.Snippet,
			Score:        c.Score,
		})
	}
	return out
}
