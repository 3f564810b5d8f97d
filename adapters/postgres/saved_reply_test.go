package postgres_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func newSavedReply(workspaceID, shortcut, title string) domain.SavedReply {
	return domain.SavedReply{
		ID:          domain.NewID(domain.PrefixSavedReply),
		WorkspaceID: workspaceID,
		Shortcut:    shortcut,
		Title:       title,
		Body:        "Body of " + shortcut,
		CreatedAt:   t0,
		UpdatedAt:   t0,
	}
}

func createSavedReply(t *testing.T, store *postgres.Store, r domain.SavedReply) domain.SavedReply {
	t.Helper()
	if err := store.CreateSavedReply(ctxT(t), &r); err != nil {
		t.Fatalf("CreateSavedReply(%s): %v", r.Shortcut, err)
	}
	return r
}

func shortcutsOf(page domain.Page[domain.SavedReply]) []string {
	out := []string{}
	for _, r := range page.Items {
		out = append(out, r.Shortcut)
	}
	return out
}

func TestSavedReplyRoundTrip(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	author := newUser(t, store, "author@example.com")

	r := newSavedReply(ws.ID, "refund", "Refunds")
	r.CreatedBy = author.ID
	r = createSavedReply(t, store, r)
	if !r.CreatedAt.Equal(micro(t0)) {
		t.Fatalf("CreatedAt = %v, want it truncated to %v", r.CreatedAt, micro(t0))
	}
	got, err := store.GetSavedReply(ctx, ws.ID, r.ID)
	if err != nil {
		t.Fatalf("GetSavedReply: %v", err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("GetSavedReply = %+v, want %+v", got, r)
	}

	r.Shortcut, r.Title, r.Body = "refunds", "Refund policy", "Thirty days."
	r.UpdatedAt = t0.Add(1e9)
	if err := store.UpdateSavedReply(ctx, &r); err != nil {
		t.Fatalf("UpdateSavedReply: %v", err)
	}
	if got, _ = store.GetSavedReply(ctx, ws.ID, r.ID); !reflect.DeepEqual(got, r) {
		t.Fatalf("after update = %+v, want %+v", got, r)
	}

	if err := store.DeleteSavedReply(ctx, ws.ID, r.ID); err != nil {
		t.Fatalf("DeleteSavedReply: %v", err)
	}
	if _, err := store.GetSavedReply(ctx, ws.ID, r.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("GetSavedReply after delete = %v, want ErrNotFound", err)
	}
	if err := store.DeleteSavedReply(ctx, ws.ID, r.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second DeleteSavedReply = %v, want ErrNotFound", err)
	}
	if err := store.UpdateSavedReply(ctx, &r); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("UpdateSavedReply of a deleted reply = %v, want ErrNotFound", err)
	}
}

func TestSavedReplyShortcutConflict(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	first := createSavedReply(t, store, newSavedReply(ws.ID, "hello", "Hello"))
	second := createSavedReply(t, store, newSavedReply(ws.ID, "bye", "Bye"))

	dup := newSavedReply(ws.ID, "hello", "Hello again")
	if err := store.CreateSavedReply(ctx, &dup); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("CreateSavedReply with a taken shortcut = %v, want ErrConflict", err)
	}
	// The same shortcut in another workspace is its own.
	createSavedReply(t, store, newSavedReply(other.ID, "hello", "Hello"))

	second.Shortcut = first.Shortcut
	if err := store.UpdateSavedReply(ctx, &second); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("UpdateSavedReply to a taken shortcut = %v, want ErrConflict", err)
	}
	if got, _ := store.GetSavedReply(ctx, ws.ID, second.ID); got.Shortcut != "bye" {
		t.Fatalf("refused update changed the shortcut to %q", got.Shortcut)
	}

	missing := newSavedReply(domain.NewID(domain.PrefixWorkspace), "x", "X")
	if err := store.CreateSavedReply(ctx, &missing); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("CreateSavedReply in a missing workspace = %v, want ErrNotFound", err)
	}
}

func TestSavedReplyTenantIsolation(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	mine, _, _ := newWorkspace(t, store, domain.PlanStandard)
	theirs, _, _ := newWorkspace(t, store, domain.PlanStandard)
	r := createSavedReply(t, store, newSavedReply(theirs.ID, "secret", "Theirs"))

	if _, err := store.GetSavedReply(ctx, mine.ID, r.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("GetSavedReply from another workspace = %v, want ErrNotFound", err)
	}
	stolen := r
	stolen.WorkspaceID, stolen.Title = mine.ID, "Mine now"
	if err := store.UpdateSavedReply(ctx, &stolen); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("UpdateSavedReply from another workspace = %v, want ErrNotFound", err)
	}
	if err := store.DeleteSavedReply(ctx, mine.ID, r.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("DeleteSavedReply from another workspace = %v, want ErrNotFound", err)
	}
	page, err := store.ListSavedReplies(ctx, mine.ID, ports.SavedReplyQuery{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("ListSavedReplies of an empty workspace = %v, %v; want none", shortcutsOf(page), err)
	}
	if got, _ := store.GetSavedReply(ctx, theirs.ID, r.ID); got.Title != "Theirs" {
		t.Fatalf("their reply changed: %+v", got)
	}
}

func TestListSavedReplies(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	for _, r := range []struct{ shortcut, title string }{
		{"refund", "Money back"},
		{"ref-2", "Reference letter"},
		{"hello", "Greeting"},
		{"zz-top", "Refund for a damaged parcel"},
		{"percent", "50% off"},
		{"under", "a_b"},
		{"ab", "Über uns"},
	} {
		createSavedReply(t, store, newSavedReply(ws.ID, r.shortcut, r.title))
	}

	tests := []struct {
		name   string
		prefix string
		want   []string
	}{
		{"all in byte order", "", []string{"ab", "hello", "percent", "ref-2", "refund", "under", "zz-top"}},
		{"shortcut or title prefix", "ref", []string{"ref-2", "refund", "zz-top"}},
		{"case-insensitive", "REFUND", []string{"refund", "zz-top"}},
		{"title only", "greet", []string{"hello"}},
		{"percent matches itself", "50%", []string{"percent"}},
		{"percent is no wildcard", "%", []string{}},
		{"underscore is no wildcard", "a_", []string{"under"}},
		{"underscore matches only itself", "a_x", []string{}},
		{"non-ASCII title", "über", []string{"ab"}},
		{"no match", "nothing", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := store.ListSavedReplies(ctx, ws.ID, ports.SavedReplyQuery{Prefix: tt.prefix, Limit: 100})
			if err != nil {
				t.Fatalf("ListSavedReplies: %v", err)
			}
			if got := shortcutsOf(page); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ListSavedReplies(%q) = %v, want %v", tt.prefix, got, tt.want)
			}
		})
	}

	// Pages of two walk the whole list once, in order.
	var walked []string
	q := ports.SavedReplyQuery{Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		page, err := store.ListSavedReplies(ctx, ws.ID, q)
		if err != nil {
			t.Fatalf("ListSavedReplies: %v", err)
		}
		walked = append(walked, shortcutsOf(page)...)
		if !page.HasMore {
			break
		}
		q.AfterShortcut = page.Next.ID
	}
	if want := []string{"ab", "hello", "percent", "ref-2", "refund", "under", "zz-top"}; !reflect.DeepEqual(walked, want) {
		t.Fatalf("paged walk = %v, want %v", walked, want)
	}
}

func TestSavedReplyLimitPerWorkspace(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	for i := range domain.MaxSavedRepliesPerWorkspace - 2 {
		createSavedReply(t, store, newSavedReply(ws.ID, fmt.Sprintf("r%03d", i), "Reply"))
	}

	// Eight creations race for the last two places: exactly two win.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newSavedReply(ws.ID, fmt.Sprintf("race-%d", i), "Race")
			errs[i] = store.CreateSavedReply(ctx, &r)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, domain.ErrConflict):
			t.Fatalf("racing CreateSavedReply = %v, want nil or ErrConflict", err)
		}
	}
	if won != 2 {
		t.Fatalf("%d racing creations won, want 2", won)
	}
	full := newSavedReply(ws.ID, "one-more", "One more")
	if err := store.CreateSavedReply(ctx, &full); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("CreateSavedReply in a full workspace = %v, want ErrConflict", err)
	}
	// The cap is per workspace.
	createSavedReply(t, store, newSavedReply(other.ID, "one-more", "One more"))
}
