package savedreply_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/savedreply"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

const ws = "ws_00000000000000000000000000"

var (
	owner   = savedreply.MemberActor(domain.Member{WorkspaceID: ws, UserID: "usr_owner", Role: domain.MemberOwner})
	admin   = savedreply.MemberActor(domain.Member{WorkspaceID: ws, UserID: "usr_admin", Role: domain.MemberAdmin})
	agent   = savedreply.MemberActor(domain.Member{WorkspaceID: ws, UserID: "usr_agent", Role: domain.MemberAgent})
	apiKey  = savedreply.APIKeyActor(ws)
	nobody  = savedreply.Actor{WorkspaceID: ws, UserID: "usr_nobody"}
	outside = savedreply.MemberActor(domain.Member{WorkspaceID: "ws_11111111111111111111111111", UserID: "usr_other", Role: domain.MemberOwner})
)

func newService(replies ...domain.SavedReply) (*savedreply.Service, *fakeStore) {
	store := &fakeStore{replies: replies}
	return savedreply.NewService(store, fakeClock{now}), store
}

func seeded() domain.SavedReply {
	return domain.SavedReply{
		ID: domain.NewID(domain.PrefixSavedReply), WorkspaceID: ws, Shortcut: "hello",
		Title: "Greeting", Body: "Hello there!", CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour),
	}
}

// TestRoles is the permission matrix: every member reads, owners, admins
// and API keys manage, an actor with no role does nothing.
func TestRoles(t *testing.T) {
	tests := []struct {
		name         string
		actor        savedreply.Actor
		read, manage bool
	}{
		{"owner", owner, true, true},
		{"admin", admin, true, true},
		{"agent", agent, true, false},
		{"api key", apiKey, true, true},
		{"no role", nobody, false, false},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := seeded()
			svc, store := newService(r)
			check := func(op string, err error, allowed bool) {
				t.Helper()
				if allowed && err != nil {
					t.Errorf("%s: %v, want allowed", op, err)
				}
				if !allowed && !errors.Is(err, domain.ErrForbidden) {
					t.Errorf("%s: %v, want ErrForbidden", op, err)
				}
			}
			_, err := svc.List(ctx, tt.actor, savedreply.ListRequest{})
			check("List", err, tt.read)
			_, err = svc.Search(ctx, tt.actor, "he", 5)
			check("Search", err, tt.read)
			_, err = svc.Get(ctx, tt.actor, r.ID)
			check("Get", err, tt.read)
			_, err = svc.Create(ctx, tt.actor, savedreply.Draft{Shortcut: "new", Title: "New", Body: "Body"})
			check("Create", err, tt.manage)
			title := "Changed"
			_, err = svc.Update(ctx, tt.actor, r.ID, savedreply.Patch{Title: &title})
			check("Update", err, tt.manage)
			check("Delete", svc.Delete(ctx, tt.actor, r.ID), tt.manage)
			if !tt.manage && (len(store.replies) != 1 || store.replies[0] != r) {
				t.Errorf("a refused actor changed the replies: %+v", store.replies)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name  string
		draft savedreply.Draft
		want  error
	}{
		{"valid", savedreply.Draft{Shortcut: "refund", Title: "  Refunds ", Body: "Thirty days."}, nil},
		{"taken shortcut", savedreply.Draft{Shortcut: "hello", Title: "Hi", Body: "Hi"}, domain.ErrConflict},
		{"bad shortcut", savedreply.Draft{Shortcut: "Hello", Title: "Hi", Body: "Hi"}, domain.ErrInvalidInput},
		{"no title", savedreply.Draft{Shortcut: "x", Title: " ", Body: "Hi"}, domain.ErrInvalidInput},
		{"no body", savedreply.Draft{Shortcut: "x", Title: "X", Body: ""}, domain.ErrInvalidInput},
		{"body too long", savedreply.Draft{Shortcut: "x", Title: "X", Body: strings.Repeat("a", domain.MaxMessageLength+1)}, domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := newService(seeded())
			got, err := svc.Create(context.Background(), admin, tt.draft)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Create = %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				if len(store.replies) != 1 {
					t.Fatalf("a refused draft was stored: %+v", store.replies)
				}
				return
			}
			want := domain.SavedReply{ID: got.ID, WorkspaceID: ws, Shortcut: "refund", Title: "Refunds", Body: "Thirty days.",
				CreatedBy: "usr_admin", CreatedAt: now, UpdatedAt: now}
			if !domain.ValidID(domain.PrefixSavedReply, got.ID) || !reflect.DeepEqual(got, want) {
				t.Fatalf("Create = %+v, want %+v", got, want)
			}
		})
	}
}

func TestCreateByAPIKeyHasNoAuthor(t *testing.T) {
	svc, _ := newService()
	got, err := svc.Create(context.Background(), apiKey, savedreply.Draft{Shortcut: "x", Title: "X", Body: "Y"})
	if err != nil || got.CreatedBy != "" {
		t.Fatalf("Create = %+v, %v; want no author", got, err)
	}
}

func TestUpdate(t *testing.T) {
	ptr := func(s string) *string { return &s }
	other := seeded()
	other.Shortcut = "bye"
	tests := []struct {
		name  string
		id    string // "" means the seeded reply
		patch savedreply.Patch
		want  error
		check func(domain.SavedReply) bool
	}{
		{"title only", "", savedreply.Patch{Title: ptr("Hi")}, nil, func(r domain.SavedReply) bool {
			return r.Title == "Hi" && r.Shortcut == "hello" && r.Body == "Hello there!" && r.UpdatedAt.Equal(now)
		}},
		{"all fields", "", savedreply.Patch{Shortcut: ptr("hi"), Title: ptr("Hi"), Body: ptr("Hi!")}, nil, func(r domain.SavedReply) bool {
			return r.Shortcut == "hi" && r.Title == "Hi" && r.Body == "Hi!"
		}},
		{"empty patch", "", savedreply.Patch{}, nil, func(r domain.SavedReply) bool { return r.Title == "Greeting" }},
		{"taken shortcut", "", savedreply.Patch{Shortcut: ptr("bye")}, domain.ErrConflict, nil},
		{"blank body", "", savedreply.Patch{Body: ptr("  ")}, domain.ErrInvalidInput, nil},
		{"long title", "", savedreply.Patch{Title: ptr(strings.Repeat("t", 101))}, domain.ErrInvalidInput, nil},
		{"unknown id", domain.NewID(domain.PrefixSavedReply), savedreply.Patch{Title: ptr("Hi")}, domain.ErrNotFound, nil},
		{"malformed id", "rpl_x", savedreply.Patch{Title: ptr("Hi")}, domain.ErrNotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := seeded()
			svc, store := newService(r, other)
			id := tt.id
			if id == "" {
				id = r.ID
			}
			got, err := svc.Update(context.Background(), owner, id, tt.patch)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Update = %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				if store.replies[0] != r {
					t.Fatalf("a refused patch changed the reply: %+v", store.replies[0])
				}
				return
			}
			if !tt.check(got) || store.replies[0] != got {
				t.Fatalf("Update = %+v, stored %+v", got, store.replies[0])
			}
		})
	}
}

func TestOtherWorkspaceSeesNothing(t *testing.T) {
	r := seeded()
	svc, store := newService(r)
	ctx := context.Background()
	if _, err := svc.Get(ctx, outside, r.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Get = %v, want ErrNotFound", err)
	}
	if err := svc.Delete(ctx, outside, r.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("Delete = %v, want ErrNotFound", err)
	}
	page, err := svc.List(ctx, outside, savedreply.ListRequest{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("List = %+v, %v; want empty", page.Items, err)
	}
	if len(store.replies) != 1 {
		t.Fatal("the reply is gone")
	}
}

func TestListAndSearch(t *testing.T) {
	var replies []domain.SavedReply
	for _, sc := range []string{"refund", "hello", "ref-2", "bye"} {
		r := seeded()
		r.Shortcut, r.Title = sc, "Title "+sc
		replies = append(replies, r)
	}
	tests := []struct {
		name    string
		req     savedreply.ListRequest
		want    []string
		wantErr error
	}{
		{"all", savedreply.ListRequest{}, []string{"bye", "hello", "ref-2", "refund"}, nil},
		{"prefix", savedreply.ListRequest{Prefix: "ref"}, []string{"ref-2", "refund"}, nil},
		{"title prefix, any case", savedreply.ListRequest{Prefix: "TITLE B"}, []string{"bye"}, nil},
		{"after", savedreply.ListRequest{AfterShortcut: "hello"}, []string{"ref-2", "refund"}, nil},
		{"page of one", savedreply.ListRequest{Limit: 1}, []string{"bye"}, nil},
		{"limit too big", savedreply.ListRequest{Limit: 101}, nil, domain.ErrInvalidInput},
		{"negative limit", savedreply.ListRequest{Limit: -1}, nil, domain.ErrInvalidInput},
		{"prefix too long", savedreply.ListRequest{Prefix: strings.Repeat("a", 101)}, nil, domain.ErrInvalidInput},
		{"prefix with NUL", savedreply.ListRequest{Prefix: "a\x00"}, nil, domain.ErrInvalidInput},
		{"bad cursor shortcut", savedreply.ListRequest{AfterShortcut: "NOT A SHORTCUT"}, nil, domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := newService(replies...)
			page, err := svc.List(context.Background(), agent, tt.req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("List = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if store.calls != 0 {
					t.Fatal("a refused request reached the store")
				}
				return
			}
			var got []string
			for _, r := range page.Items {
				got = append(got, r.Shortcut)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("List = %v, want %v", got, tt.want)
			}
		})
	}

	svc, store := newService(replies...)
	got, err := svc.Search(context.Background(), agent, "re", 1)
	if err != nil || len(got) != 1 || got[0].Shortcut != "ref-2" {
		t.Fatalf("Search = %+v, %v; want ref-2 alone", got, err)
	}
	if store.lastQuery.Limit != 1 || store.lastQuery.Prefix != "re" {
		t.Fatalf("store asked %+v", store.lastQuery)
	}
	if _, err := svc.Search(context.Background(), agent, "", 0); err != nil || store.lastQuery.Limit != domain.DefaultPageLimit {
		t.Fatalf("Search with no limit = %v, asked %+v; want the default limit", err, store.lastQuery)
	}
}
