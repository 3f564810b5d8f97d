package assignment_test

import (
	"context"
	"errors"
	"testing"

	"github.com/conciergehq/concierge/core/assignment"
	"github.com/conciergehq/concierge/core/domain"
)

// recordingStore records the change it was asked for and answers with err.
type recordingStore struct {
	got   *domain.AssigneeChange
	err   error
	calls int
}

func (r *recordingStore) ChangeAssignee(_ context.Context, c domain.AssigneeChange) (domain.Conversation, error) {
	r.calls++
	r.got = &c
	if r.err != nil {
		return domain.Conversation{}, r.err
	}
	return domain.Conversation{ID: c.ConversationID, WorkspaceID: c.WorkspaceID, AssigneeID: c.AssigneeID}, nil
}

func TestService(t *testing.T) {
	ws := domain.NewID(domain.PrefixWorkspace)
	conv := domain.NewID(domain.PrefixSession)
	user := domain.NewID(domain.PrefixUser)
	member := domain.Member{WorkspaceID: ws, UserID: user, Role: domain.MemberAgent}
	outsider := domain.Member{WorkspaceID: domain.NewID(domain.PrefixWorkspace), UserID: domain.NewID(domain.PrefixUser), Role: domain.MemberOwner}

	tests := []struct {
		name      string
		run       func(*assignment.Service) (domain.Conversation, error)
		storeErr  error
		wantErr   error
		wantField string
		want      *domain.AssigneeChange // nil: the store is not called
	}{
		{"take over", func(s *assignment.Service) (domain.Conversation, error) {
			return s.TakeOver(context.Background(), ws, conv, member)
		}, nil, nil, "", &domain.AssigneeChange{WorkspaceID: ws, ConversationID: conv, AssigneeID: user, TakeOver: true}},
		{"take over by another workspace's member", func(s *assignment.Service) (domain.Conversation, error) {
			return s.TakeOver(context.Background(), ws, conv, outsider)
		}, nil, domain.ErrForbidden, "", nil},
		{"take over a malformed id", func(s *assignment.Service) (domain.Conversation, error) {
			return s.TakeOver(context.Background(), ws, "ses_x", member)
		}, nil, domain.ErrNotFound, "", nil},
		{"take over what another holds", func(s *assignment.Service) (domain.Conversation, error) {
			return s.TakeOver(context.Background(), ws, conv, member)
		}, domain.HeldByOther("usr_other"), domain.ErrConflict, "", &domain.AssigneeChange{WorkspaceID: ws, ConversationID: conv, AssigneeID: user, TakeOver: true}},
		{"assign by an API key", func(s *assignment.Service) (domain.Conversation, error) {
			return s.Assign(context.Background(), ws, conv, user, nil)
		}, nil, nil, "", &domain.AssigneeChange{WorkspaceID: ws, ConversationID: conv, AssigneeID: user}},
		{"assign a malformed user id", func(s *assignment.Service) (domain.Conversation, error) {
			return s.Assign(context.Background(), ws, conv, "bob", &member)
		}, nil, domain.ErrInvalidInput, "assigneeId", nil},
		{"assign to a non-member", func(s *assignment.Service) (domain.Conversation, error) {
			return s.Assign(context.Background(), ws, conv, user, &member)
		}, domain.InvalidField("assigneeId", "is not a member of this workspace"), domain.ErrInvalidInput, "assigneeId",
			&domain.AssigneeChange{WorkspaceID: ws, ConversationID: conv, AssigneeID: user}},
		{"assign by another workspace's member", func(s *assignment.Service) (domain.Conversation, error) {
			return s.Assign(context.Background(), ws, conv, user, &outsider)
		}, nil, domain.ErrForbidden, "", nil},
		{"unassign", func(s *assignment.Service) (domain.Conversation, error) {
			return s.Unassign(context.Background(), ws, conv, &member)
		}, nil, nil, "", &domain.AssigneeChange{WorkspaceID: ws, ConversationID: conv}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &recordingStore{err: tt.storeErr}
			_, err := tt.run(assignment.NewService(store))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			var v *domain.ValidationError
			if tt.wantField != "" && (!errors.As(err, &v) || v.Fields[tt.wantField] == "") {
				t.Fatalf("err %v, want a validation error on %s", err, tt.wantField)
			}
			switch {
			case tt.want == nil && store.calls != 0:
				t.Fatalf("the store was asked for %+v", *store.got)
			case tt.want != nil && (store.got == nil || *store.got != *tt.want):
				t.Fatalf("store asked for %+v, want %+v", store.got, *tt.want)
			}
		})
	}
}
