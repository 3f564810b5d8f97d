package v2_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/savedreply"
)

const savedReplyID = "rpl_00000000000000000000000001"

func aSavedReply() domain.SavedReply {
	return domain.SavedReply{ID: savedReplyID, WorkspaceID: "ws_test", Shortcut: "refund", Title: "Refunds",
		Body: "<b>Thirty</b> days.", CreatedAt: now, UpdatedAt: now}
}

// keyActorOf checks the use case was called as the workspace's API key.
func keyActorOf(t *testing.T, a any) {
	t.Helper()
	if got := a.(savedreply.Actor); got != savedreply.APIKeyActor("ws_test") {
		t.Fatalf("actor = %+v, want the API key of ws_test", got)
	}
}

func TestSavedReplies(t *testing.T) {
	list := httpapitest.Request{Method: "GET", Path: "/api/v2/saved-replies?q=Ref"}
	httpapitest.Run(t, "GET /saved-replies", newApp, append(append([]httpapitest.Case{{
		Name:   "lists with a prefix",
		Req:    list,
		Script: map[string]httpapitest.Result{"SavedReplies.List": {Values: []any{page(aSavedReply())}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"data.0.id": savedReplyID, "data.0.shortcut": "refund", "data.0.body": "<b>Thirty</b> days.",
			"data.0.createdBy": nil, "data.0.createdAt": "2026-11-27T12:00:00.000Z", "meta.nextCursor": nil,
		}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			args := httpapitest.OnlyCall(t, s, "SavedReplies.List")
			keyActorOf(t, args[0])
			if req := args[1].(savedreply.ListRequest); req != (savedreply.ListRequest{Prefix: "Ref", Limit: 20}) {
				t.Fatalf("List(%+v)", req)
			}
		},
	}}, httpapitest.BadPages("/api/v2/saved-replies")...), httpapitest.ErrorCases(list, "SavedReplies.List", 400, 500, 503)...))

	create := httpapitest.Request{Method: "POST", Path: "/api/v2/saved-replies", Body: `{"shortcut":"refund","title":"Refunds","body":"Thirty days."}`}
	httpapitest.Run(t, "POST /saved-replies", newApp, append(append([]httpapitest.Case{{
		Name:   "creates",
		Req:    create,
		Script: map[string]httpapitest.Result{"SavedReplies.Create": {Values: []any{aSavedReply()}}},
		Want:   httpapitest.Want{Status: 201, Fields: map[string]any{"id": savedReplyID}, Header: map[string]string{"Location": "/api/v2/saved-replies/" + savedReplyID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			args := httpapitest.OnlyCall(t, s, "SavedReplies.Create")
			keyActorOf(t, args[0])
			if d := args[1].(savedreply.Draft); d != (savedreply.Draft{Shortcut: "refund", Title: "Refunds", Body: "Thirty days."}) {
				t.Fatalf("Create(%+v)", d)
			}
		},
	}}, httpapitest.BadBodies("POST", "/api/v2/saved-replies")...), httpapitest.ErrorCases(create, "SavedReplies.Create", 400, 409, 500, 503)...))

	get := httpapitest.Request{Method: "GET", Path: "/api/v2/saved-replies/" + savedReplyID}
	httpapitest.Run(t, "GET /saved-replies/{id}", newApp, append([]httpapitest.Case{{
		Name:   "gets",
		Req:    get,
		Script: map[string]httpapitest.Result{"SavedReplies.Get": {Values: []any{aSavedReply()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": savedReplyID, "title": "Refunds"}},
	}}, httpapitest.ErrorCases(get, "SavedReplies.Get", 404, 500)...))

	update := httpapitest.Request{Method: "PATCH", Path: "/api/v2/saved-replies/" + savedReplyID, Body: `{"title":"Money back"}`}
	httpapitest.Run(t, "PATCH /saved-replies/{id}", newApp, append(append([]httpapitest.Case{{
		Name:   "patches the fields sent",
		Req:    update,
		Script: map[string]httpapitest.Result{"SavedReplies.Update": {Values: []any{aSavedReply()}}},
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"id": savedReplyID}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			args := httpapitest.OnlyCall(t, s, "SavedReplies.Update")
			keyActorOf(t, args[0])
			p := args[2].(savedreply.Patch)
			if args[1] != savedReplyID || p.Title == nil || *p.Title != "Money back" || p.Shortcut != nil || p.Body != nil {
				t.Fatalf("Update(%v, %+v)", args[1], p)
			}
		},
	}}, httpapitest.BadBodies("PATCH", "/api/v2/saved-replies/"+savedReplyID)...), httpapitest.ErrorCases(update, "SavedReplies.Update", 400, 404, 409, 500)...))

	del := httpapitest.Request{Method: "DELETE", Path: "/api/v2/saved-replies/" + savedReplyID}
	httpapitest.Run(t, "DELETE /saved-replies/{id}", newApp, append([]httpapitest.Case{{
		Name:   "deletes",
		Req:    del,
		Script: map[string]httpapitest.Result{"SavedReplies.Delete": {}},
		Want:   httpapitest.Want{Status: 204},
	}}, httpapitest.ErrorCases(del, "SavedReplies.Delete", 404, 500)...))
}

// TestSavedReplyCursor: the next page's cursor carries the last shortcut,
// and is refused for another prefix.
func TestSavedReplyCursor(t *testing.T) {
	first := domain.Page[domain.SavedReply]{Items: []domain.SavedReply{aSavedReply()}, HasMore: true, Next: &domain.Position{ID: "refund"}}
	s := httpapitest.NewScript(map[string]httpapitest.Result{"SavedReplies.List": {Values: []any{first}}})
	res := newApp(t, s).Do(t, httpapitest.Request{Method: "GET", Path: "/api/v2/saved-replies?q=re&limit=1"})
	var body struct {
		Meta struct{ NextCursor string } `json:"meta"`
	}
	if err := json.Unmarshal(res.Body, &body); err != nil || res.Status != 200 || body.Meta.NextCursor == "" {
		t.Fatalf("first page: %d %s (%v)", res.Status, res.Body, err)
	}
	cursor := url.QueryEscape(body.Meta.NextCursor)

	s = httpapitest.NewScript(map[string]httpapitest.Result{"SavedReplies.List": {Values: []any{page[domain.SavedReply]()}}})
	res = newApp(t, s).Do(t, httpapitest.Request{Method: "GET", Path: "/api/v2/saved-replies?q=re&limit=1&cursor=" + cursor})
	if res.Status != 200 {
		t.Fatalf("second page: %d %s", res.Status, res.Body)
	}
	if req := httpapitest.OnlyCall(t, s, "SavedReplies.List")[1].(savedreply.ListRequest); req.AfterShortcut != "refund" || req.Prefix != "re" || req.Limit != 1 {
		t.Fatalf("List(%+v), want after refund", req)
	}

	s = httpapitest.NewScript(nil)
	res = newApp(t, s).Do(t, httpapitest.Request{Method: "GET", Path: "/api/v2/saved-replies?q=other&cursor=" + cursor})
	if res.Status != 400 || len(s.Calls("SavedReplies.List")) != 0 {
		t.Fatalf("cursor of another prefix: %d %s", res.Status, res.Body)
	}
}
