package availability_test

import (
	"context"
	"errors"
	"testing"

	"github.com/conciergehq/concierge/core/availability"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// fakeMembers keeps availability per workspace and user.
type fakeMembers struct {
	members map[string]map[string]bool // workspace -> user -> available
}

func (f *fakeMembers) SetAvailable(_ context.Context, workspaceID, userID string, available bool) (domain.Member, error) {
	ms, ok := f.members[workspaceID]
	if _, member := ms[userID]; !ok || !member {
		return domain.Member{}, domain.NotFound("member")
	}
	ms[userID] = available
	return domain.Member{WorkspaceID: workspaceID, UserID: userID, Available: available}, nil
}

func (f *fakeMembers) AnyAvailable(_ context.Context, workspaceID string) (bool, error) {
	for _, a := range f.members[workspaceID] {
		if a {
			return true, nil
		}
	}
	return false, nil
}

type fakeWorkspaces struct {
	ports.WorkspaceStore
	byID map[string]domain.Workspace
}

func (f fakeWorkspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	ws, ok := f.byID[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return ws, nil
}

type fakeConversations struct {
	ports.ConversationReader
	byID map[string]domain.Conversation
}

func (f fakeConversations) GetConversationBySession(_ context.Context, id string) (domain.Conversation, error) {
	c, ok := f.byID[id]
	if !ok {
		return domain.Conversation{}, domain.NotFound("session")
	}
	return c, nil
}

func TestAvailability(t *testing.T) {
	ctx := context.Background()
	alone := domain.NewID(domain.PrefixWorkspace)    // its one member is away
	helpdesk := domain.NewID(domain.PrefixWorkspace) // nobody available, but a helpdesk
	gone := domain.NewID(domain.PrefixWorkspace)     // deleted, its session left
	ada := domain.NewID(domain.PrefixUser)
	members := &fakeMembers{members: map[string]map[string]bool{alone: {ada: false}, helpdesk: {}}}
	sesAlone, sesHelpdesk, sesGone := domain.NewID(domain.PrefixSession), domain.NewID(domain.PrefixSession), domain.NewID(domain.PrefixSession)
	svc := availability.NewService(availability.Deps{
		Members: members,
		Workspaces: fakeWorkspaces{byID: map[string]domain.Workspace{
			alone: {ID: alone}, helpdesk: {ID: helpdesk, HelpdeskURL: "https://help.example.com/hook"},
		}},
		Conversations: fakeConversations{byID: map[string]domain.Conversation{
			sesAlone: {ID: sesAlone, WorkspaceID: alone}, sesHelpdesk: {ID: sesHelpdesk, WorkspaceID: helpdesk},
			sesGone: {ID: sesGone, WorkspaceID: gone},
		}},
	})

	forSession := func(id string) (bool, error) { return svc.ForSession(ctx, id) }
	cases := []struct {
		name    string
		call    func() (bool, error)
		want    bool
		wantErr error
	}{
		{"everyone away", func() (bool, error) { return svc.HumanAvailable(ctx, alone) }, false, nil},
		{"session of a workspace with everyone away", func() (bool, error) { return forSession(sesAlone) }, false, nil},
		{"helpdesk counts as someone", func() (bool, error) { return forSession(sesHelpdesk) }, true, nil},
		{"unknown workspace", func() (bool, error) { return svc.HumanAvailable(ctx, gone) }, false, domain.ErrNotFound},
		{"session of a deleted workspace", func() (bool, error) { return forSession(sesGone) }, false, domain.ErrNotFound},
		{"unknown session", func() (bool, error) { return forSession(domain.NewID(domain.PrefixSession)) }, false, domain.ErrNotFound},
		{"not a session id", func() (bool, error) { return forSession("../etc") }, false, domain.ErrNotFound},
		{"after ada became available", func() (bool, error) {
			if _, err := svc.SetAvailable(ctx, domain.Member{WorkspaceID: alone, UserID: ada}, true); err != nil {
				return false, err
			}
			return forSession(sesAlone)
		}, true, nil},
		{"after ada went away again", func() (bool, error) {
			m, err := svc.SetAvailable(ctx, domain.Member{WorkspaceID: alone, UserID: ada}, false)
			if err != nil || m.Available {
				t.Errorf("SetAvailable(false) = %+v, %v", m, err)
			}
			return svc.HumanAvailable(ctx, alone)
		}, false, nil},
	}
	for _, tc := range cases {
		got, err := tc.call()
		if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestSetAvailableRefusals(t *testing.T) {
	ctx := context.Background()
	ws, ada := domain.NewID(domain.PrefixWorkspace), domain.NewID(domain.PrefixUser)
	svc := availability.NewService(availability.Deps{Members: &fakeMembers{members: map[string]map[string]bool{ws: {ada: false}}}})
	for name, tc := range map[string]struct {
		actor domain.Member
		want  error
	}{
		"no workspace":        {domain.Member{UserID: ada}, domain.ErrForbidden},
		"no user":             {domain.Member{WorkspaceID: ws}, domain.ErrForbidden},
		"member no more":      {domain.Member{WorkspaceID: ws, UserID: domain.NewID(domain.PrefixUser)}, domain.ErrNotFound},
		"another workspace's": {domain.Member{WorkspaceID: domain.NewID(domain.PrefixWorkspace), UserID: ada}, domain.ErrNotFound},
	} {
		if _, err := svc.SetAvailable(ctx, tc.actor, true); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}
