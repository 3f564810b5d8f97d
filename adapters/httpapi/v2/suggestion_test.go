package v2_test

import (
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/domain"
)

func TestSuggestedReply(t *testing.T) {
	const id = "ses_00000000000000000000000001"
	path := "/api/v2/conversations/" + id + "/suggested-reply"
	suggest := httpapitest.Request{Method: "POST", Path: path}
	drafted := chat.Suggestion{Draft: "Refunds are accepted within 30 days [1].", Citations: []domain.Citation{
		{DocumentName: "Refund policy", SourceID: "src_refunds", URL: "https://lumen.example/refunds", Snippet: "Refunds...", Score: 0.9},
		{DocumentName: "Returns", SourceID: "src_returns"},
	}}
	called := func(t *testing.T, s *httpapitest.Script) {
		args := httpapitest.OnlyCall(t, s, "Suggestions.Suggest")
		if args[0] != "ws_test" || args[1] != id {
			t.Fatalf("Suggest(%v)", args)
		}
	}
	bad := httpapitest.BadBodies("POST", path)
	// An empty body is the usual request; {} is accepted too.
	httpapitest.Run(t, "POST /conversations/{id}/suggested-reply", newApp, append(append([]httpapitest.Case{{
		Name:   "drafts with citations",
		Req:    suggest,
		Script: map[string]httpapitest.Result{"Suggestions.Suggest": {Values: []any{drafted}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"draft": "Refunds are accepted within 30 days [1].", "fallback": false, "fallbackReason": httpapitest.Absent,
			"citations.0.title": "Refund policy", "citations.0.sourceId": "src_refunds", "citations.0.url": "https://lumen.example/refunds",
			"citations.0.snippet": httpapitest.Absent, "citations.1.title": "Returns", "citations.1.url": httpapitest.Absent,
		}},
		Calls: called,
	}, {
		Name: "a fallback draft, with an empty body object",
		Req:  httpapitest.Request{Method: "POST", Path: path, Body: `{}`},
		Script: map[string]httpapitest.Result{"Suggestions.Suggest": {Values: []any{chat.Suggestion{
			Draft: "Sorry, I can't help with that one.", Fallback: true, FallbackReason: domain.FallbackNoKnowledge,
		}}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"draft": "Sorry, I can't help with that one.", "fallback": true, "fallbackReason": "NO_RELEVANT_KNOWLEDGE", "citations": []any{},
		}},
		Calls: called,
	}}, bad...), httpapitest.ErrorCases(suggest, "Suggestions.Suggest", 403, 404, 409, 500, 503)...))
}
