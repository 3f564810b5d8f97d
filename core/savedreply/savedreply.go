// Package savedreply holds the use cases of a workspace's saved replies:
// canned answers that agents insert in the composer with "/" and a shortcut.
package savedreply

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Actor is who asks: a member signed in to the console, or an API key.
type Actor struct {
	WorkspaceID string
	// UserID is the member's user id; "" for an API key.
	UserID string
	// Role is the member's role; unused for an API key.
	Role domain.MemberRole
	// APIKey is set when a v2 API key acts. A key carries the whole
	// workspace's access, as it does on every other v2 route.
	APIKey bool
}

// MemberActor is the actor of a console member.
func MemberActor(m domain.Member) Actor {
	return Actor{WorkspaceID: m.WorkspaceID, UserID: m.UserID, Role: m.Role}
}

// APIKeyActor is the actor of an API key of the workspace.
func APIKeyActor(workspaceID string) Actor {
	return Actor{WorkspaceID: workspaceID, APIKey: true}
}

// canRead: every member reads the replies (agents insert them); an actor
// with no known role is refused rather than trusted.
func (a Actor) canRead() error {
	if a.APIKey || slices.Contains(domain.MemberRoles, a.Role) {
		return nil
	}
	return &domain.ForbiddenError{Reason: "only the workspace's members read its saved replies"}
}

func (a Actor) canManage() error {
	if a.APIKey {
		return nil
	}
	return a.Role.Require(domain.PermSavedReplies)
}

// Service runs the saved reply use cases, always within the actor's workspace.
type Service struct {
	replies ports.SavedReplyStore
	clock   ports.Clock
}

// NewService returns a Service.
func NewService(replies ports.SavedReplyStore, clock ports.Clock) *Service {
	return &Service{replies: replies, clock: clock}
}

// MaxPrefix caps a search prefix: nothing longer can match a title.
const MaxPrefix = domain.MaxSavedReplyTitle

// ListRequest asks for one page of the workspace's replies in shortcut order.
type ListRequest struct {
	// Prefix keeps replies whose shortcut or title starts with it, ignoring case.
	Prefix string
	// AfterShortcut is the last shortcut of the previous page ("" for the first).
	AfterShortcut string
	// Limit is the page size; 0 means domain.DefaultPageLimit.
	Limit int
}

// List returns a page of the replies. Any member may list. Returns
// domain.ErrForbidden for an actor with no role and domain.ErrInvalidInput
// for a bad prefix, cursor or limit.
func (s *Service) List(ctx context.Context, actor Actor, req ListRequest) (domain.Page[domain.SavedReply], error) {
	if err := actor.canRead(); err != nil {
		return domain.Page[domain.SavedReply]{}, err
	}
	limit, err := domain.ValidatePageLimit(req.Limit)
	if err != nil {
		return domain.Page[domain.SavedReply]{}, err
	}
	if err := validatePrefix(req.Prefix); err != nil {
		return domain.Page[domain.SavedReply]{}, err
	}
	if req.AfterShortcut != "" && domain.ValidateSavedReplyShortcut(req.AfterShortcut) != nil {
		return domain.Page[domain.SavedReply]{}, domain.InvalidField("cursor", "is not a saved reply's position")
	}
	return s.replies.ListSavedReplies(ctx, actor.WorkspaceID, ports.SavedReplyQuery{
		Prefix: req.Prefix, AfterShortcut: req.AfterShortcut, Limit: limit,
	})
}

// Search returns up to limit replies whose shortcut or title starts with
// prefix, ignoring case, in shortcut order: the composer's "/" lookup. An
// empty prefix lists the first ones. Errors as List.
func (s *Service) Search(ctx context.Context, actor Actor, prefix string, limit int) ([]domain.SavedReply, error) {
	page, err := s.List(ctx, actor, ListRequest{Prefix: prefix, Limit: limit})
	if err != nil {
		return nil, err
	}
	return page.Items, nil
}

func validatePrefix(prefix string) error {
	if err := domain.ValidateText("q", prefix); err != nil {
		return err
	}
	if utf8.RuneCountInString(prefix) > MaxPrefix {
		return domain.InvalidField("q", "must be at most 100 characters")
	}
	return nil
}

// Get returns one reply. Any member may read it. Returns domain.ErrNotFound
// if the workspace has no reply with the id (a malformed id included).
func (s *Service) Get(ctx context.Context, actor Actor, id string) (domain.SavedReply, error) {
	if err := actor.canRead(); err != nil {
		return domain.SavedReply{}, err
	}
	if !domain.ValidID(domain.PrefixSavedReply, id) {
		return domain.SavedReply{}, domain.NotFound("saved reply")
	}
	return s.replies.GetSavedReply(ctx, actor.WorkspaceID, id)
}

// Draft is what a new reply is made of.
type Draft struct {
	Shortcut string
	Title    string
	Body     string
}

// Create stores a new reply written by the actor. Owners, admins and API
// keys may. Returns domain.ErrForbidden, domain.ErrInvalidInput for bad
// fields, domain.ErrConflict when the shortcut is taken or the workspace
// keeps domain.MaxSavedRepliesPerWorkspace replies.
func (s *Service) Create(ctx context.Context, actor Actor, d Draft) (domain.SavedReply, error) {
	if err := actor.canManage(); err != nil {
		return domain.SavedReply{}, err
	}
	now := s.clock.Now()
	r := domain.SavedReply{
		ID:          domain.NewID(domain.PrefixSavedReply),
		WorkspaceID: actor.WorkspaceID,
		Shortcut:    d.Shortcut,
		Title:       strings.TrimSpace(d.Title),
		Body:        d.Body,
		CreatedBy:   actor.UserID,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	if err := r.Validate(); err != nil {
		return domain.SavedReply{}, err
	}
	if err := s.replies.CreateSavedReply(ctx, &r); err != nil {
		return domain.SavedReply{}, err
	}
	return r, nil
}

// Patch lists the fields to change; nil leaves a field as it is.
type Patch struct {
	Shortcut *string
	Title    *string
	Body     *string
}

// Update applies a patch. Owners, admins and API keys may. Returns
// domain.ErrForbidden, domain.ErrNotFound, domain.ErrInvalidInput for bad
// fields (nothing is saved then), domain.ErrConflict when the new shortcut
// is taken.
func (s *Service) Update(ctx context.Context, actor Actor, id string, p Patch) (domain.SavedReply, error) {
	if err := actor.canManage(); err != nil {
		return domain.SavedReply{}, err
	}
	r, err := s.Get(ctx, actor, id)
	if err != nil {
		return domain.SavedReply{}, err
	}
	if p.Shortcut != nil {
		r.Shortcut = *p.Shortcut
	}
	if p.Title != nil {
		r.Title = strings.TrimSpace(*p.Title)
	}
	if p.Body != nil {
		r.Body = *p.Body
	}
	if err := r.Validate(); err != nil {
		return domain.SavedReply{}, err
	}
	r.UpdatedAt = s.clock.Now()
	if err := s.replies.UpdateSavedReply(ctx, &r); err != nil {
		return domain.SavedReply{}, err
	}
	return r, nil
}

// Delete removes a reply. Owners, admins and API keys may. Returns
// domain.ErrForbidden or domain.ErrNotFound.
func (s *Service) Delete(ctx context.Context, actor Actor, id string) error {
	if err := actor.canManage(); err != nil {
		return err
	}
	if !domain.ValidID(domain.PrefixSavedReply, id) {
		return domain.NotFound("saved reply")
	}
	return s.replies.DeleteSavedReply(ctx, actor.WorkspaceID, id)
}
