package v1

import (
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/adapters/httpapi/wire/wiretest"
)

// FuzzRequestBodies decodes any body into each of v1's request DTOs
// (wiretest.DecodeHolds says what must hold).
func FuzzRequestBodies(f *testing.F) {
	dtos := []func() any{
		func() any { return &sessionCreate{} },
		func() any { return &messageRequest{} },
		func() any { return &handoffRequest{} },
		func() any { return &feedbackRequest{} },
	}
	for _, seed := range []string{
		`{"slug":"support"}`,
		`{"message":"Where is my order?","stream":true}`,
		`{"name":"Ann","email":"ann@example.com","note":"call me"}`,
		`{"rating":"up","comment":"great"}`, `{"rating":null}`, `{"rating":5}`,
		`{"message":"a\u0000b"}`, "{\"note\":\"\xc3\x28\"}", `{}`, `"str"`, `{"message":"x"}{}`,
	} {
		for i := range dtos {
			f.Add([]byte(seed), uint8(i))
		}
	}
	d := wire.NewDecoder()
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		if err := wiretest.DecodeHolds(d, body, "application/json", dtos[int(which)%len(dtos)]); err != nil {
			t.Fatal(err)
		}
	})
}
