package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/core/domain"
)

// handoffWithNote moves conv to HANDOFF_REQUESTED with the handoff form's
// contact, as conversation.Lifecycle.Move does for core/handoff.
func handoffWithNote(t *testing.T, store *postgres.Store, conv domain.Conversation, contact domain.HandoffContact, at time.Time) domain.Conversation {
	t.Helper()
	next := conv
	next.Status = domain.StatusHandoffRequested
	got, changed, err := store.ChangeStatus(ctxT(t), domain.StatusChange{
		WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID, To: domain.StatusHandoffRequested,
		Notice: domain.NewStatusNotice(next, domain.StatusHandoffRequested, "", at), Contact: &contact,
	})
	if err != nil || !changed {
		t.Fatalf("ChangeStatus to HANDOFF_REQUESTED = %v, %v", changed, err)
	}
	return got
}

// The handoff note is stored with the contact and read back by every read
// of a conversation: get, list, and the row a later change returns. A
// second request with a new note replaces it; one without a note keeps it.
func TestHandoffNoteStoredOnTheConversation(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	got := handoffWithNote(t, f.store, f.conv, domain.HandoffContact{Name: "Ada", Note: "It's about <b>order</b> #42"}, t0.Add(time.Minute))
	if got.ContactNote != "It's about <b>order</b> #42" {
		t.Fatalf("ChangeStatus returned note %q", got.ContactNote)
	}
	read, err := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
	if err != nil || read.ContactNote != got.ContactNote || read.ContactName != "Ada" {
		t.Fatalf("GetConversation = %+v, %v", read, err)
	}
	page, err := f.store.ListConversations(ctx, f.ws.ID, domain.ConversationFilter{}, domain.PageRequest{Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].ContactNote != got.ContactNote {
		t.Fatalf("ListConversations = %+v, %v", page.Items, err)
	}

	// Back to the AI, then asked again: without a note the note stays, with
	// a new one the new one is the note.
	next := got
	next.Status = domain.StatusAI
	if _, changed, err := f.store.ChangeStatus(ctx, domain.StatusChange{
		WorkspaceID: f.ws.ID, ConversationID: f.conv.ID, To: domain.StatusAI,
		Notice: domain.NewStatusNotice(next, domain.StatusAI, "", t0.Add(2*time.Minute)),
	}); err != nil || !changed {
		t.Fatalf("ChangeStatus to AI = %v, %v", changed, err)
	}
	tests := []struct {
		name    string
		contact domain.HandoffContact
		want    string
	}{
		{"a request without a note keeps it", domain.HandoffContact{Email: "ada@example.com"}, "It's about <b>order</b> #42"},
		{"a request with a new note replaces it", domain.HandoffContact{Note: "Call after 5pm"}, "Call after 5pm"},
	}
	for i, tt := range tests {
		at := t0.Add(time.Duration(3+2*i) * time.Minute)
		current, err := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
		if err != nil {
			t.Fatal(err)
		}
		moved := handoffWithNote(t, f.store, current, tt.contact, at)
		if moved.ContactNote != tt.want || moved.ContactName != "Ada" {
			t.Errorf("%s: note %q name %q, want note %q", tt.name, moved.ContactNote, moved.ContactName, tt.want)
		}
		back := moved
		back.Status = domain.StatusAI
		if _, changed, err := f.store.ChangeStatus(ctx, domain.StatusChange{
			WorkspaceID: f.ws.ID, ConversationID: f.conv.ID, To: domain.StatusAI,
			Notice: domain.NewStatusNotice(back, domain.StatusAI, "", at.Add(time.Second)),
		}); err != nil || !changed {
			t.Fatalf("%s: ChangeStatus to AI = %v, %v", tt.name, changed, err)
		}
	}

	// Another workspace never reads it.
	other, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
	if _, err := f.store.GetConversation(ctx, other.ID, f.conv.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("GetConversation from another workspace = %v, want not found", err)
	}
}

// Migration 00022 goes down and up again on a table holding a handed-off
// conversation: down drops the column, up brings it back empty for the
// rows that exist (catalog only, no rewrite of a stored value).
func TestContactNoteMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn, pg, store, ws, agent := migrationFixture(t, t0)
	ctx := ctxT(t)
	conv := handoffWithNote(t, store, newConversation(t, store, ws.ID, agent, t0), domain.HandoffContact{Name: "Ada", Note: "call me"}, t0.Add(time.Minute))
	if err := pg.Close(); err != nil {
		t.Fatal(err)
	}

	provider, db := migrationProvider(t, dsn)
	// Later migrations go down first; 00022 is the last to.
	if rs, err := provider.DownTo(ctx, 21); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 22 {
		t.Fatalf("down to 21: %+v, %v", rs, err)
	}
	var columns int
	const column = `SELECT count(*) FROM information_schema.columns WHERE table_name = 'conversations' AND column_name = 'contact_note'`
	if err := db.QueryRowContext(ctx, column).Scan(&columns); err != nil || columns != 0 {
		t.Fatalf("down left %d contact_note columns (%v)", columns, err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	var name, note string
	if err := db.QueryRowContext(ctx, `SELECT contact_name, contact_note FROM conversations WHERE id = $1`, conv.ID).Scan(&name, &note); err != nil {
		t.Fatal(err)
	}
	if name != "Ada" || note != "" {
		t.Fatalf("after down and up: name %q note %q, want the name kept and an empty note", name, note)
	}
}
