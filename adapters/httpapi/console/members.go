package console

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// The member pages need domain.PermMembers (owners and admins); the account
// service decides the finer rules (only owners manage owners; a workspace
// keeps an owner) and its refusals are shown on the page.

type membersPage struct {
	Members     []domain.Member
	Invitations []account.Invitation
	// Invited is the invitation just made, whose link is shown once after
	// the redirect from Invite.
	Invited *account.Invitation
	// InviteEmail and InviteRole keep the invite form's values.
	InviteEmail string
	InviteRole  domain.MemberRole
	Roles       []domain.MemberRole
	Self        string
}

func (h *Handlers) membersView(c *fiber.Ctx) (*view, *membersPage, error) {
	v, err := h.newView(c, mustText("members.title"), "members")
	if err != nil {
		return nil, nil, err
	}
	actor := member(c)
	ms, err := h.accounts.Members(c.UserContext(), actor)
	if err != nil {
		return nil, nil, err
	}
	invs, err := h.accounts.Invitations(c.UserContext(), actor)
	if err != nil {
		return nil, nil, err
	}
	// Only owners manage owners: others are not offered the role (the
	// service refuses it anyway).
	roles := domain.MemberRoles
	if actor.Role != domain.MemberOwner {
		roles = []domain.MemberRole{domain.MemberAdmin, domain.MemberAgent}
	}
	pg := &membersPage{Members: ms, Invitations: invs, InviteRole: domain.MemberAgent, Roles: roles, Self: actor.UserID}
	v.Data = pg
	return v, pg, nil
}

// MembersPage lists members and open invitations, with the invite form,
// and once after an invitation was made, its link.
func (h *Handlers) MembersPage(c *fiber.Ctx) error {
	v, pg, err := h.membersView(c)
	if err != nil {
		return err
	}
	r, err := h.takeReveal(c, v, revealInvite)
	if err != nil {
		return err
	}
	if r != nil {
		pg.Invited = &account.Invitation{Email: r.Email, ExpiresAt: r.ExpiresAt, Emailed: r.Emailed, Link: r.Secret}
	}
	return h.render(c, fiber.StatusOK, "members", v)
}

// Invite makes an invitation and redirects to the page that shows its
// link, once, to the inviter.
func (h *Handlers) Invite(c *fiber.Ctx) error {
	if err := h.revealStore(); err != nil {
		return err
	}
	email := formValue(c, "email")
	role, err := domain.ParseMemberRole(c.FormValue("role"))
	var inv account.Invitation
	if err == nil {
		inv, err = h.accounts.Invite(c.UserContext(), member(c), account.InviteRequest{Email: email, Role: role})
	}
	if err != nil {
		v, pg, verr := h.membersView(c)
		if verr != nil {
			return verr
		}
		pg.InviteEmail, pg.InviteRole = email, role
		return h.memberRefusal(c, v, err)
	}
	ws := member(c).WorkspaceID
	return h.keepReveal(c, Prefix+"/w/"+ws+"/members", reveal{Kind: revealInvite, WorkspaceID: ws,
		Secret: inv.Link, Email: inv.Email, ExpiresAt: inv.ExpiresAt, Emailed: inv.Emailed})
}

// memberRefusal shows the members page again with why the service refused:
// a bad field, the last owner, or a role that may not do this.
func (h *Handlers) memberRefusal(c *fiber.Ctx, v *view, err error) error {
	var fb *domain.ForbiddenError
	if errors.As(err, &fb) {
		v.Error = mustText("err.forbidden", fb.Reason)
		return h.render(c, fiber.StatusForbidden, "members", v)
	}
	if ferr := formError(v, err); ferr != nil {
		return ferr
	}
	return h.render(c, statusOf(err), "members", v)
}

type confirmMember struct {
	Member domain.Member
	Role   domain.MemberRole
}

// findMember returns the workspace's member with the user id, or a
// domain.ErrNotFound.
func (h *Handlers) findMember(c *fiber.Ctx) (domain.Member, error) {
	ms, err := h.accounts.Members(c.UserContext(), member(c))
	if err != nil {
		return domain.Member{}, err
	}
	for _, m := range ms {
		if m.UserID == c.Params("userID") {
			return m, nil
		}
	}
	return domain.Member{}, domain.NotFound("member")
}

// RolePage asks to confirm a role change (the form picks the role with GET).
func (h *Handlers) RolePage(c *fiber.Ctx) error {
	m, err := h.findMember(c)
	if err != nil {
		return err
	}
	role, err := domain.ParseMemberRole(c.Query("role"))
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("members.role.title", displayName(m), role), "members")
	if err != nil {
		return err
	}
	v.Data = confirmMember{Member: m, Role: role}
	return h.render(c, fiber.StatusOK, "member-role", v)
}

// ChangeRole gives the member the confirmed role.
func (h *Handlers) ChangeRole(c *fiber.Ctx) error {
	role, err := domain.ParseMemberRole(c.FormValue("role"))
	if err == nil {
		_, err = h.accounts.ChangeRole(c.UserContext(), member(c), strings.Clone(c.Params("userID")), role)
	}
	return h.afterMemberChange(c, err, "role")
}

// RemovePage asks to confirm removing a member.
func (h *Handlers) RemovePage(c *fiber.Ctx) error {
	m, err := h.findMember(c)
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("members.remove.title", displayName(m)), "members")
	if err != nil {
		return err
	}
	v.Data = confirmMember{Member: m}
	return h.render(c, fiber.StatusOK, "member-remove", v)
}

// RemoveMember removes the member from the workspace.
func (h *Handlers) RemoveMember(c *fiber.Ctx) error {
	err := h.accounts.RemoveMember(c.UserContext(), member(c), strings.Clone(c.Params("userID")))
	return h.afterMemberChange(c, err, "removed")
}

// RevokePage asks to confirm revoking an invitation.
func (h *Handlers) RevokePage(c *fiber.Ctx) error {
	invs, err := h.accounts.Invitations(c.UserContext(), member(c))
	if err != nil {
		return err
	}
	for _, inv := range invs {
		if inv.ID == c.Params("invitationID") {
			v, err := h.newView(c, mustText("members.revoke.title", inv.Email), "members")
			if err != nil {
				return err
			}
			v.Data = inv
			return h.render(c, fiber.StatusOK, "invitation-revoke", v)
		}
	}
	return domain.NotFound("invitation")
}

// RevokeInvitation makes the invitation's link stop working.
func (h *Handlers) RevokeInvitation(c *fiber.Ctx) error {
	err := h.accounts.RevokeInvitation(c.UserContext(), member(c), strings.Clone(c.Params("invitationID")))
	return h.afterMemberChange(c, err, "revoked")
}

// afterMemberChange returns to the members page with the outcome: a
// notice, or the refusal (such as removing the last owner) shown on it.
func (h *Handlers) afterMemberChange(c *fiber.Ctx, err error, done string) error {
	if err == nil {
		return redirect(c, Prefix+"/w/"+member(c).WorkspaceID+"/members?done="+done)
	}
	if errors.Is(err, domain.ErrNotFound) {
		return err
	}
	v, _, verr := h.membersView(c)
	if verr != nil {
		return verr
	}
	return h.memberRefusal(c, v, err)
}

func displayName(m domain.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return m.Email
}
