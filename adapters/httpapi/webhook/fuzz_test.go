package webhook

import (
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/adapters/httpapi/wire/wiretest"
)

// FuzzInboundBody decodes any body as the inbound webhook's
// (wiretest.DecodeHolds says what must hold).
func FuzzInboundBody(f *testing.F) {
	for _, seed := range []string{
		`{"event":"chat.message","sessionId":"ses_x","message":"Hello"}`,
		`{"event":"crm.note","message":""}`,
		`{"event":"chat.message","message":"\u0000"}`,
		"{\"event\":\"\xff\"}", `{"event":1}`, `{"event":"x","extra":true}`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	d := wire.NewDecoder()
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := wiretest.DecodeHolds(d, body, "application/json", func() any { return &inboundRequest{} }); err != nil {
			t.Fatal(err)
		}
	})
}
