package console

import (
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// Knowledge: the list names types and statuses by computed keys, which
// TestHandlersNameOnlyKnownTexts cannot see; every one has its text.
func TestEverySourceTypeAndStatusHasText(t *testing.T) {
	for _, typ := range domain.SourceTypes {
		if _, ok := text["knowledge.type."+string(typ)]; !ok {
			t.Errorf("no text for source type %q", typ)
		}
	}
	for _, st := range []domain.SourceStatus{domain.SourcePending, domain.SourceIndexing, domain.SourceReady, domain.SourceFailed} {
		if _, ok := text["knowledge.status."+string(st)]; !ok {
			t.Errorf("no text for status %q", st)
		}
	}
}
