package v2

import (
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/adapters/httpapi/wire/wiretest"
)

// FuzzRequestBodies decodes any body into each of v2's request DTOs
// (wiretest.DecodeHolds says what must hold).
func FuzzRequestBodies(f *testing.F) {
	dtos := []func() any{
		func() any { return &chatRequest{} },
		func() any { return &agentCreate{} },
		func() any { return &agentUpdate{} },
		func() any { return &sourceCreate{} },
		func() any { return &humanMessageCreate{} },
		func() any { return &statusChange{} },
		func() any { return &integrationsUpdate{} },
		func() any { return &retrieveRequest{} },
	}
	for _, seed := range []string{
		`{"agent":"support","message":"How long does shipping take?","stream":true}`,
		`{"slug":"support","name":"Support","suggestedQuestions":["a","b"],"blockedTopics":["x"],"retrievalThreshold":0.2}`,
		`{"systemPrompt":"be kind","published":false,"model":"openai:gpt-4o-mini","allowedOrigins":["https://a.example"]}`,
		`{"type":"website","url":"https://example.com","maxPages":10,"maxDepth":2}`,
		`{"type":"qa","question":"q\u0000","answer":"a"}`,
		`{"role":"HUMAN","content":"hi","authorName":"Ann"}`,
		`{"status":"RESOLVED"}`,
		`{"helpdeskUrl":"https://desk.example.com/in","eventsUrl":""}`,
		`{"query":"refund","limit":5}`,
		"{\"message\":\"\xff\"}",
		`[1,2]`, `null`, `{"message":`, `{"Message":"case"}`,
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
