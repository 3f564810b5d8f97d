package assignment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/assignment"
	"github.com/conciergehq/concierge/core/domain"
)

func TestChooseAssignee(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	cand := func(id string, role domain.MemberRole, available bool, open int, last time.Time) domain.AssignCandidate {
		return domain.AssignCandidate{UserID: id, Role: role, Available: available, Open: open, LastAutoAssignedAt: last}
	}
	tests := []struct {
		name       string
		candidates []domain.AssignCandidate
		want       string
	}{
		{"nobody in the workspace", nil, ""},
		{"fewest open wins", []domain.AssignCandidate{
			cand("usr_a", domain.MemberAgent, true, 3, time.Time{}),
			cand("usr_b", domain.MemberAgent, true, 1, t0),
			cand("usr_c", domain.MemberAdmin, true, 2, time.Time{}),
		}, "usr_b"},
		{"a tie goes to the one auto-assigned least recently", []domain.AssignCandidate{
			cand("usr_a", domain.MemberAgent, true, 1, t0.Add(time.Minute)),
			cand("usr_b", domain.MemberOwner, true, 1, t0),
			cand("usr_c", domain.MemberAgent, true, 1, t0.Add(2*time.Minute)),
		}, "usr_b"},
		{"never auto-assigned comes before any time", []domain.AssignCandidate{
			cand("usr_a", domain.MemberAgent, true, 0, t0),
			cand("usr_b", domain.MemberAgent, true, 0, time.Time{}),
		}, "usr_b"},
		{"a full tie goes to the lowest user id, whatever the order read", []domain.AssignCandidate{
			cand("usr_c", domain.MemberAgent, true, 0, t0),
			cand("usr_a", domain.MemberAgent, true, 0, t0),
			cand("usr_b", domain.MemberAgent, true, 0, t0),
		}, "usr_a"},
		{"away members are skipped, however idle", []domain.AssignCandidate{
			cand("usr_a", domain.MemberAgent, false, 0, time.Time{}),
			cand("usr_b", domain.MemberAgent, true, 5, t0),
		}, "usr_b"},
		{"roles that cannot take conversations are skipped", []domain.AssignCandidate{
			cand("usr_a", domain.MemberRole("viewer"), true, 0, time.Time{}),
			cand("usr_b", domain.MemberRole(""), true, 0, time.Time{}),
			cand("usr_c", domain.MemberAgent, true, 4, t0),
		}, "usr_c"},
		{"nobody available", []domain.AssignCandidate{
			cand("usr_a", domain.MemberAgent, false, 0, time.Time{}),
			cand("usr_b", domain.MemberOwner, false, 0, time.Time{}),
		}, ""},
		{"only roles that cannot take conversations", []domain.AssignCandidate{
			cand("usr_a", domain.MemberRole("viewer"), true, 0, time.Time{}),
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := assignment.ChooseAssignee(tt.candidates); got != tt.want {
				t.Fatalf("ChooseAssignee = %q, want %q", got, tt.want)
			}
		})
	}
}

// workspaces answers GetWorkspace with ws, or err.
type workspaces struct {
	ws  domain.Workspace
	err error
}

func (w workspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	if w.err != nil || id != w.ws.ID {
		return domain.Workspace{}, errors.Join(w.err, domain.NotFound("workspace"))
	}
	return w.ws, nil
}

func TestAutoAssign(t *testing.T) {
	ada := domain.AssignCandidate{UserID: domain.NewID(domain.PrefixUser), Role: domain.MemberAgent, Available: true}
	tests := []struct {
		name       string
		on         bool
		candidates []domain.AssignCandidate
		id         string // "" a valid conversation id
		wantErr    error
		wantCalled bool
		want       string // the assignee; "" nobody
	}{
		{"on, a member available", true, []domain.AssignCandidate{ada}, "", nil, true, ada.UserID},
		{"on, nobody available", true, nil, "", nil, true, ""},
		{"off", false, []domain.AssignCandidate{ada}, "", nil, false, ""},
		{"a malformed conversation id", true, []domain.AssignCandidate{ada}, "ses_x", domain.ErrNotFound, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRigWith(t, domain.PlanStandard, tt.on)
			r.store.candidates = tt.candidates
			id := tt.id
			if id == "" {
				id = domain.NewID(domain.PrefixSession)
			}
			conv, assigned, err := r.svc.AutoAssign(t.Context(), r.ws.ID, id)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if (r.store.calls != 0) != tt.wantCalled {
				t.Fatalf("store calls %d, want called %v", r.store.calls, tt.wantCalled)
			}
			if !tt.wantCalled {
				return
			}
			if got := r.store.got; got.AssigneeID != "" || got.TakeOver || !got.At.Equal(r.now) || got.WorkspaceID != r.ws.ID {
				t.Fatalf("store got %+v, want an auto-assignment at %v", got, r.now)
			}
			if assigned != (tt.want != "") || conv.AssigneeID != tt.want {
				t.Fatalf("assigned %v to %q, want %q", assigned, conv.AssigneeID, tt.want)
			}
			// As for a manual assignment: conversation.assigned is
			// delivered only when the assignee changed.
			wantEvents := 0
			if tt.want != "" {
				wantEvents = 1
			}
			if len(r.queue.types) != wantEvents || (wantEvents == 1 && r.queue.types[0] != domain.EventConversationAssigned) {
				t.Fatalf("scheduled %v, want %d conversation.assigned", r.queue.types, wantEvents)
			}
		})
	}
}

func TestAutoAssignUnknownWorkspace(t *testing.T) {
	r := newRigWith(t, domain.PlanStandard, true)
	_, _, err := r.svc.AutoAssign(t.Context(), domain.NewID(domain.PrefixWorkspace), domain.NewID(domain.PrefixSession))
	if !errors.Is(err, domain.ErrNotFound) || r.store.calls != 0 {
		t.Fatalf("err %v, store calls %d; want ErrNotFound and no call", err, r.store.calls)
	}
}
