package console

import (
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/savedreply"
)

// Saved replies live under Settings, where a support lead looks for them,
// but their list is not a settings page: every member who answers
// conversations (domain.PermConversations) may open it, since agents
// insert the replies with "/" and need to know what there is. Creating,
// editing and deleting need domain.PermSavedReplies (owners and admins),
// the permission savedreply.Service itself enforces; the page hides those
// controls from the others, and the routes refuse them before the service
// is asked.

// savedRepliesPageSize is how many replies one page of the list shows.
const savedRepliesPageSize = domain.MaxPageLimit

// savedReplyForm is the form's fields as typed, so a refused form shows
// again with what was entered. The names are the domain's field names, so
// validation messages land next to their fields.
type savedReplyForm struct {
	Shortcut, Title, Body string
}

func savedReplyFormOf(c *fiber.Ctx) savedReplyForm {
	return savedReplyForm{
		Shortcut: strings.TrimSpace(formValue(c, "shortcut")),
		Title:    formValue(c, "title"),
		Body:     formValue(c, "body"),
	}
}

// savedReplyRow is a reply as the list shows it: the first line of its
// text stands in for the rest.
type savedReplyRow struct {
	domain.SavedReply
	FirstLine string
	// Edited is the last change in UTC, EditedISO the same for <time>.
	Edited, EditedISO string
}

type savedRepliesPage struct {
	Rows []savedReplyRow
	// Form keeps the create form's values after a refusal.
	Form savedReplyForm
	// CanManage shows the create form and the edit and delete links.
	CanManage bool
	// Next is the URL of the next page, "" on the last; Later says this
	// is not the first page.
	Next  string
	Later bool
	// Limits, said in the hints before the service has to.
	MaxShortcut, MaxTitle, MaxBody int
}

// savedReplyPage is the edit form and the delete confirmation.
type savedReplyPage struct {
	Reply                          domain.SavedReply
	Form                           savedReplyForm
	MaxShortcut, MaxTitle, MaxBody int
}

// savedReplyService is the use case, or 503 when the console was built
// without it.
func (h *Handlers) savedReplyService() (SavedReplies, error) {
	if h.savedReplies == nil {
		return nil, domain.Unavailable("saved reply service", errors.New("console built without Options.SavedReplies"))
	}
	return h.savedReplies, nil
}

func savedRepliesPath(c *fiber.Ctx) string {
	return Prefix + "/w/" + member(c).WorkspaceID + "/settings/saved-replies"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}

func formatEdited(t time.Time) (text, iso string) {
	return t.UTC().Format("2006-01-02 15:04 UTC"), t.UTC().Format("2006-01-02T15:04:05Z")
}

// savedRepliesView lists a page of the replies, from the one after the
// shortcut in ?after=. A bad ?after= is the service's field error, shown
// on the page with status 400.
func (h *Handlers) savedRepliesView(c *fiber.Ctx, s SavedReplies) (*view, *savedRepliesPage, error) {
	v, err := h.newView(c, mustText("replies.title"), "replies")
	if err != nil {
		return nil, nil, err
	}
	m := member(c)
	pg := &savedRepliesPage{
		CanManage:   m.Role.Can(domain.PermSavedReplies),
		MaxShortcut: domain.MaxSavedReplyShortcut, MaxTitle: domain.MaxSavedReplyTitle, MaxBody: domain.MaxMessageLength,
	}
	v.Data = pg
	after := strings.Clone(c.Query("after"))
	pg.Later = after != ""
	page, err := s.List(c.UserContext(), savedreply.MemberActor(m),
		savedreply.ListRequest{AfterShortcut: after, Limit: savedRepliesPageSize})
	if err != nil {
		return v, pg, err
	}
	for _, r := range page.Items {
		row := savedReplyRow{SavedReply: r, FirstLine: firstLine(r.Body)}
		row.Edited, row.EditedISO = formatEdited(r.UpdatedAt)
		pg.Rows = append(pg.Rows, row)
	}
	if page.HasMore && len(page.Items) > 0 {
		pg.Next = savedRepliesPath(c) + "?after=" + url.QueryEscape(page.Items[len(page.Items)-1].Shortcut)
	}
	return v, pg, nil
}

// SavedRepliesPage lists the workspace's saved replies in shortcut order,
// with the create form for those who may manage them.
func (h *Handlers) SavedRepliesPage(c *fiber.Ctx) error {
	s, err := h.savedReplyService()
	if err != nil {
		return err
	}
	v, _, err := h.savedRepliesView(c, s)
	if err != nil {
		if v == nil {
			return err
		}
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "saved-replies", v)
	}
	return h.render(c, fiber.StatusOK, "saved-replies", v)
}

// CreateSavedReply stores a new reply; a refusal shows the list again
// with the form as typed and the service's messages next to its fields.
func (h *Handlers) CreateSavedReply(c *fiber.Ctx) error {
	s, err := h.savedReplyService()
	if err != nil {
		return err
	}
	m := member(c)
	f := savedReplyFormOf(c)
	_, err = s.Create(c.UserContext(), savedreply.MemberActor(m), savedreply.Draft{Shortcut: f.Shortcut, Title: f.Title, Body: f.Body})
	if err == nil {
		return redirect(c, savedRepliesPath(c)+"?done=replycreated")
	}
	if !isFormError(err) {
		return err
	}
	v, pg, verr := h.savedRepliesView(c, s)
	if verr != nil {
		return verr
	}
	pg.Form = f
	h.savedReplyFormError(c, s, v, "", f, err)
	return h.render(c, statusOf(err), "saved-replies", v)
}

// isFormError says whether err is shown on the form: bad fields, a taken
// shortcut, a full workspace. Anything else is the error page's.
func isFormError(err error) bool {
	return errors.Is(err, domain.ErrInvalidInput) || errors.Is(err, domain.ErrConflict)
}

// savedReplyFormError puts a refusal on the form. A conflict is either a
// taken shortcut or a full workspace, which the service tells apart only
// in words; the console looks the shortcut up, so a taken one is said
// next to its field.
func (h *Handlers) savedReplyFormError(c *fiber.Ctx, s SavedReplies, v *view, id string, f savedReplyForm, err error) {
	if isConflict(err) && f.Shortcut != "" {
		// Titles match the prefix too, so the exact shortcut is looked for
		// among the first page.
		found, serr := s.Search(c.UserContext(), savedreply.MemberActor(member(c)), f.Shortcut, domain.MaxPageLimit)
		for _, r := range found {
			if serr == nil && r.Shortcut == f.Shortcut && r.ID != id {
				v.Error = mustText("form.problems")
				v.Fields = map[string]string{"shortcut": mustText("replies.shortcut.taken", f.Shortcut)}
				return
			}
		}
	}
	_ = formError(v, err) // isFormError kept only the errors formError shows
}

// savedReplyView loads the reply in the URL; another workspace's id, or
// one that is not a reply's, is domain.ErrNotFound like a deleted one.
func (h *Handlers) savedReplyView(c *fiber.Ctx, s SavedReplies, title string) (*view, *savedReplyPage, error) {
	r, err := s.Get(c.UserContext(), savedreply.MemberActor(member(c)), c.Params("replyID"))
	if err != nil {
		return nil, nil, err
	}
	v, err := h.newView(c, mustText(title, r.Shortcut), "replies")
	if err != nil {
		return nil, nil, err
	}
	pg := &savedReplyPage{Reply: r, Form: savedReplyForm{Shortcut: r.Shortcut, Title: r.Title, Body: r.Body},
		MaxShortcut: domain.MaxSavedReplyShortcut, MaxTitle: domain.MaxSavedReplyTitle, MaxBody: domain.MaxMessageLength}
	v.Data = pg
	return v, pg, nil
}

// SavedReplyPage is a reply's edit form.
func (h *Handlers) SavedReplyPage(c *fiber.Ctx) error {
	s, err := h.savedReplyService()
	if err != nil {
		return err
	}
	v, _, err := h.savedReplyView(c, s, "replies.edit.title")
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "saved-reply", v)
}

// UpdateSavedReply saves every field of the edit form.
func (h *Handlers) UpdateSavedReply(c *fiber.Ctx) error {
	s, err := h.savedReplyService()
	if err != nil {
		return err
	}
	v, pg, err := h.savedReplyView(c, s, "replies.edit.title")
	if err != nil {
		return err
	}
	f := savedReplyFormOf(c)
	_, err = s.Update(c.UserContext(), savedreply.MemberActor(member(c)), pg.Reply.ID,
		savedreply.Patch{Shortcut: &f.Shortcut, Title: &f.Title, Body: &f.Body})
	if err == nil {
		return redirect(c, savedRepliesPath(c)+"?done=replysaved")
	}
	if !isFormError(err) {
		return err
	}
	pg.Form = f
	h.savedReplyFormError(c, s, v, pg.Reply.ID, f, err)
	return h.render(c, statusOf(err), "saved-reply", v)
}

// DeleteSavedReplyPage asks to confirm deleting a reply.
func (h *Handlers) DeleteSavedReplyPage(c *fiber.Ctx) error {
	s, err := h.savedReplyService()
	if err != nil {
		return err
	}
	v, _, err := h.savedReplyView(c, s, "replies.delete.title")
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "saved-reply-delete", v)
}

// DeleteSavedReply deletes the reply; agents no longer find it with "/".
func (h *Handlers) DeleteSavedReply(c *fiber.Ctx) error {
	s, err := h.savedReplyService()
	if err != nil {
		return err
	}
	if err := s.Delete(c.UserContext(), savedreply.MemberActor(member(c)), strings.Clone(c.Params("replyID"))); err != nil {
		return err
	}
	return redirect(c, savedRepliesPath(c)+"?done=replydeleted")
}
