package wire

import (
	"github.com/conciergehq/concierge/core/chat"
)

// SuggestionDTO is a drafted reply, the one shape the console's "Suggest a
// reply" button and POST /api/v2/conversations/{id}/suggested-reply share.
// Its citations are short: a member reads titles and follows links, the
// passages themselves are in the transcript's answers.
type SuggestionDTO struct {
	Draft     string                  `json:"draft"`
	Citations []SuggestionCitationDTO `json:"citations"`
	Fallback  bool                    `json:"fallback"`
	// FallbackReason says why the draft is the fallback message; omitted
	// otherwise.
	FallbackReason string `json:"fallbackReason,omitempty"`
}

// SuggestionCitationDTO is one source a draft used.
type SuggestionCitationDTO struct {
	Title    string `json:"title"`
	URL      string `json:"url,omitempty"`
	SourceID string `json:"sourceId"`
}

// Suggestion maps a drafted reply; citations are never null.
func Suggestion(s chat.Suggestion) SuggestionDTO {
	dto := SuggestionDTO{Draft: s.Draft, Citations: make([]SuggestionCitationDTO, 0, len(s.Citations)), Fallback: s.Fallback,
		FallbackReason: string(s.FallbackReason)}
	for _, c := range s.Citations {
		dto.Citations = append(dto.Citations, SuggestionCitationDTO{Title: c.DocumentName, URL: c.URL, SourceID: c.SourceID})
	}
	return dto
}
