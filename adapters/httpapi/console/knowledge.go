package console

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/bodylimit"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
)

// The knowledge pages need domain.PermAgents, like the agent pages: an
// agent's knowledge is part of its configuration. Every change goes
// through agent.Service's source calls, the ones the v2 API makes, so a
// source refused there is refused here with the same words.

// listedSources is how many sources a page of the list shows, newest
// first; older ones are on the next pages (?cursor=, v2's cursors).
const listedSources = 100

// maxFilesPerUpload bounds the files of one upload form. With JavaScript
// each file is sent on its own; the plain form sends them together, all
// within the upload body limit (one file's 20 MiB).
const maxFilesPerUpload = 20

// sourceRow is a source as the list shows it, its words looked up once
// here rather than by the template (a list of 100 renders in a fraction of
// the time).
type sourceRow struct {
	domain.Source
	// Active is true while the source waits for or is in indexing.
	Active bool
	// Path is the source's URL in the console, for its actions.
	Path                         string
	TypeText, StatusText, Reason string
	// Pages is a web source's crawl progress, "" for other types.
	Pages              string
	Updated, UpdatedAt string
	// Detail is the file name or URL when it is not the name.
	Detail string
}

func newSourceRow(base string, s domain.Source) sourceRow {
	r := sourceRow{Source: s, Active: s.Status == domain.SourcePending || s.Status == domain.SourceIndexing,
		Path: base + "/" + s.ID, TypeText: mustText("knowledge.type." + string(s.Type)),
		StatusText: mustText("knowledge.status." + string(s.Status)),
		Updated:    s.UpdatedAt.UTC().Format("2006-01-02 15:04 UTC"), UpdatedAt: s.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z"),
	}
	if s.Status == domain.SourceFailed && s.StatusReason != "" {
		r.Reason = mustText("knowledge.failed.why", s.StatusReason)
	}
	switch s.Type {
	case domain.SourceWebsite:
		r.Pages = mustText("knowledge.pages.of", s.PageCount, s.MaxPages)
	case domain.SourceURL:
		r.Pages = strconv.Itoa(s.PageCount)
	}
	switch {
	case s.Type == domain.SourceFile && s.Filename != s.Name:
		r.Detail = s.Filename
	case s.Type.Web() && s.URL != s.Name:
		r.Detail = s.URL
	}
	return r
}

// sourceList is the list fragment, polled while any source is active.
type sourceList struct {
	Items  []sourceRow
	Active int
	More   bool
	// Next is the URL of the page of older sources, "" on the last;
	// Newest that of the first page, "" on it. Poll is the list's own URL,
	// which htmx polls, on the same page.
	Next, Newest, Poll string
	// Summary is the one line read out (aria-live) as statuses change.
	Summary string
	// Reindex and Delete are the row actions' labels.
	Reindex, Delete string
}

// sourceForm keeps what was typed in the add forms, so a refused form
// shows again as it was.
type sourceForm struct {
	Name, Content, Question, Answer, URL, SiteURL, MaxPages, MaxDepth string
}

type knowledgePage struct {
	Agent   domain.Agent
	Sources sourceList
	Form    sourceForm
	// Accept is the file input's accept list; MaxFileMiB its size limit.
	Accept string
	// Types lists the accepted extensions for people to read.
	Types        string
	MaxFileMiB   int
	MaxFileBytes int
	MaxFiles     int
	// DefaultMaxPages and the others describe a crawl's options.
	DefaultMaxPages, DefaultMaxDepth, MaxCrawlPages, MaxCrawlDepth int
}

// KnowledgeLanding lists the workspace's agents, each leading to its
// knowledge.
func (h *Handlers) KnowledgeLanding(c *fiber.Ctx) error {
	v, err := h.newView(c, mustText("knowledge.title"), "knowledge")
	if err != nil {
		return err
	}
	all, err := h.workspaceAgents(c)
	if err != nil {
		return err
	}
	v.Data = all
	return h.render(c, fiber.StatusOK, "knowledge", v)
}

// listSources reads a page of the agent's sources, newest first: the
// first, or the one the request's cursor names.
func (h *Handlers) listSources(c *fiber.Ctx, slug string) (sourceList, error) {
	scope := "console-sources|agent=" + slug
	page, err := wire.Page(c, scope, domain.PrefixSource)
	if err != nil {
		return sourceList{}, err
	}
	page.Limit = listedSources
	p, err := h.agents.ListSources(c.UserContext(), member(c).WorkspaceID, slug, page)
	if err != nil {
		return sourceList{}, err
	}
	base := Prefix + "/w/" + member(c).WorkspaceID + "/agents/" + slug + "/knowledge"
	l := sourceList{Items: make([]sourceRow, len(p.Items)), More: p.HasMore, Poll: base + "/list",
		Reindex: mustText("knowledge.reindex"), Delete: mustText("knowledge.delete")}
	if raw := c.Query("cursor"); raw != "" {
		l.Newest = base
		l.Poll += "?cursor=" + url.QueryEscape(raw)
	}
	if list := wire.NewList(p, scope, func(s domain.Source) domain.Source { return s }); list.Meta.NextCursor != nil {
		l.Next = base + "?cursor=" + url.QueryEscape(*list.Meta.NextCursor)
	}
	ready, failed := 0, 0
	for i, s := range p.Items {
		l.Items[i] = newSourceRow(base, s)
		switch {
		case l.Items[i].Active:
			l.Active++
		case s.Status == domain.SourceReady:
			ready++
		case s.Status == domain.SourceFailed:
			failed++
		}
	}
	switch {
	case len(p.Items) == 0:
		l.Summary = mustText("knowledge.summary.none")
	case l.Active > 0:
		l.Summary = mustText("knowledge.summary.active", l.Active, ready, failed)
	default:
		l.Summary = mustText("knowledge.summary.settled", ready, failed)
	}
	return l, nil
}

// knowledgeView builds the knowledge page of the agent in the URL.
func (h *Handlers) knowledgeView(c *fiber.Ctx, f sourceForm) (*view, *knowledgePage, error) {
	a, err := h.agents.Get(c.UserContext(), member(c).WorkspaceID, c.Params("slug"))
	if err != nil {
		return nil, nil, err
	}
	list, err := h.listSources(c, a.Slug)
	if err != nil {
		return nil, nil, err
	}
	v, err := h.newView(c, mustText("knowledge.of", a.Name), "knowledge")
	if err != nil {
		return nil, nil, err
	}
	pg := &knowledgePage{Agent: a, Sources: list, Form: f,
		Accept: strings.Join(domain.FileExtensions, ","), Types: strings.Join(domain.FileExtensions, ", "), MaxFileMiB: domain.MaxSourceFileBytes >> 20, MaxFileBytes: domain.MaxSourceFileBytes, MaxFiles: maxFilesPerUpload,
		DefaultMaxPages: domain.DefaultMaxPages, DefaultMaxDepth: domain.DefaultMaxDepth,
		MaxCrawlPages: domain.MaxCrawlPages, MaxCrawlDepth: domain.MaxCrawlDepth,
	}
	v.Data = pg
	return v, pg, nil
}

// AgentKnowledgePage shows the agent's sources and the forms to add more.
func (h *Handlers) AgentKnowledgePage(c *fiber.Ctx) error {
	v, _, err := h.knowledgeView(c, sourceForm{})
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "agent-knowledge", v)
}

// SourcesFragment serves the list alone, for htmx to poll: the fragment
// polls again only while a source is PENDING or INDEXING, so polling
// stops by itself once everything is settled.
func (h *Handlers) SourcesFragment(c *fiber.Ctx) error {
	v, _, err := h.knowledgeView(c, sourceForm{})
	if err != nil {
		return err
	}
	return h.renderPart(c, "agent-knowledge", "sources", v)
}

// renderPart executes one named template of a page, without the layout.
func (h *Handlers) renderPart(c *fiber.Ctx, page, name string, v *view) error {
	t, ok := h.pages[page]
	if !ok {
		return fmt.Errorf("console: no page %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, v); err != nil {
		return fmt.Errorf("console: rendering %s/%s: %w", page, name, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(fiber.StatusOK).Send(buf.Bytes())
}

// fieldOf maps the domain's field names to each form's fields (the page
// has one form per source type, each field id unique on the page).
var fieldOf = map[domain.SourceType]map[string]string{
	domain.SourceText:    {"name": "name", "content": "content"},
	domain.SourceQA:      {"question": "question", "answer": "answer", "name": "question"},
	domain.SourceURL:     {"url": "url", "name": "url"},
	domain.SourceWebsite: {"url": "siteUrl", "name": "siteUrl", "maxPages": "maxPages", "maxDepth": "maxDepth"},
}

// AddSource adds a text, Q&A, page or website source from its form.
func (h *Handlers) AddSource(c *fiber.Ctx) error {
	v := func(name string) string { return formValue(c, name) }
	f := sourceForm{Name: v("name"), Content: v("content"), Question: v("question"), Answer: v("answer"),
		URL: v("url"), SiteURL: v("siteUrl"), MaxPages: strings.TrimSpace(v("maxPages")), MaxDepth: strings.TrimSpace(v("maxDepth"))}
	typ := domain.SourceType(v("type"))
	src := domain.Source{Type: typ}
	var err error
	switch typ {
	case domain.SourceText:
		src.Name, src.Content = f.Name, f.Content
	case domain.SourceQA:
		src.Question, src.Answer = f.Question, f.Answer
	case domain.SourceURL:
		src.URL = f.URL
	case domain.SourceWebsite:
		src.URL = f.SiteURL
		src.MaxPages, err = formCount(f.MaxPages, "maxPages", domain.MaxCrawlPages)
		if err == nil {
			src.MaxDepth, err = formCount(f.MaxDepth, "maxDepth", domain.MaxCrawlDepth)
		}
	default:
		// Files come as uploads (UploadFiles); anything else is not a type.
		return domain.InvalidField("type", mustText("knowledge.bad.type"))
	}
	ws, slug := member(c).WorkspaceID, strings.Clone(c.Params("slug"))
	if err == nil {
		_, err = h.agents.AddSource(c.UserContext(), ws, slug, src)
	}
	if err == nil {
		return redirect(c, Prefix+"/w/"+ws+"/agents/"+slug+"/knowledge?done=source")
	}
	return h.sourceRefusal(c, f, typ, err)
}

// sourceRefusal shows the knowledge page again with the refusal next to
// the field of the form that was sent.
func (h *Handlers) sourceRefusal(c *fiber.Ctx, f sourceForm, typ domain.SourceType, err error) error {
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	v, _, gerr := h.knowledgeView(c, f)
	if gerr != nil {
		return gerr
	}
	v.Error = mustText("form.problems")
	v.Fields = map[string]string{}
	for field, msg := range verr.Fields {
		if to, ok := fieldOf[typ][field]; ok {
			v.Fields[to] = msg
		} else {
			v.Error = mustText("knowledge.refused", field, msg)
		}
	}
	if len(verr.Fields) == 0 {
		v.Error = verr.Message
	}
	return h.render(c, fiber.StatusBadRequest, "agent-knowledge", v)
}

// formInt reads an optional whole number; empty is 0 (the default).
func formInt(s, field string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, domain.InvalidField(field, mustText("agents.bad.number"))
	}
	return n, nil
}

// formCount reads a count field whose empty value means the default: 0
// (empty) or a number from 1 to max. A typed 0 is refused like any other
// number out of range; the services take 0 for "not given", which would
// silently turn it into the default.
func formCount(s, field string, max int) (int, error) {
	n, err := formInt(s, field)
	if err == nil && s != "" && (n < 1 || n > max) {
		return 0, domain.InvalidField(field, fmt.Sprintf("must be between 1 and %d", max))
	}
	return n, err
}

// uploadedFile is one file of an upload form.
type uploadedFile struct {
	filename string
	content  []byte
}

// UploadFiles adds one file source per file of a multipart form (the
// field file, repeated). console.js sends each file on its own, for its
// progress; the plain form sends several at once. Every file is checked
// (domain.Source.Validate, as AddSource does) before any is added, so a
// refused upload adds nothing.
func (h *Handlers) UploadFiles(c *fiber.Ctx) error {
	files, err := readUpload(c)
	if err != nil {
		return h.uploadRefusal(c, err)
	}
	srcs := make([]domain.Source, len(files))
	for i, f := range files {
		srcs[i] = domain.Source{Type: domain.SourceFile, Filename: f.filename, File: f.content}
		check := srcs[i]
		if err := check.Validate(); err != nil {
			var verr *domain.ValidationError
			if errors.As(err, &verr) && strings.TrimSpace(f.filename) != "" {
				// Name the file: with several, which one matters.
				err = domain.InvalidField("file", mustText("knowledge.file.refused", strings.TrimSpace(f.filename), fieldMessage(verr)))
			}
			return h.uploadRefusal(c, err)
		}
	}
	ws, slug := member(c).WorkspaceID, strings.Clone(c.Params("slug"))
	for i := range srcs {
		if _, err := h.agents.AddSource(c.UserContext(), ws, slug, srcs[i]); err != nil {
			return h.uploadRefusal(c, err)
		}
	}
	return redirect(c, Prefix+"/w/"+ws+"/agents/"+slug+"/knowledge?done=files")
}

func (h *Handlers) uploadRefusal(c *fiber.Ctx, err error) error {
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	v, _, gerr := h.knowledgeView(c, sourceForm{})
	if gerr != nil {
		return gerr
	}
	v.Error = mustText("form.problems")
	v.Fields = map[string]string{"file": fieldMessage(verr)}
	return h.render(c, fiber.StatusBadRequest, "agent-knowledge", v)
}

// fieldMessage is the refusal's reason: the file field's, another
// field's, or its message.
func fieldMessage(verr *domain.ValidationError) string {
	if msg, ok := verr.Fields["file"]; ok {
		return msg
	}
	for _, msg := range verr.Fields {
		return msg
	}
	return verr.Message
}

var errBadUpload = domain.InvalidField("file", mustText("knowledge.file.badform"))

// readUpload reads the files of a multipart form as they arrive: only the
// fields csrf and file (repeated), at most maxFilesPerUpload files, each
// read to one byte past the size limit so an oversize one is refused by
// the domain's own rule. When the session's check left the CSRF token to
// this handler (the body is a stream), the token must be the form's first
// part: no file is read before it is checked.
func readUpload(c *fiber.Ctx) ([]uploadedFile, error) {
	mt, params, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || mt != fiber.MIMEMultipartForm || params["boundary"] == "" {
		return nil, errBadUpload
	}
	body, err := bodylimit.Stream(c)
	if err != nil {
		return nil, err
	}
	want, mustCheck := c.Locals(uploadCSRFKey{}).(string)
	mr := multipart.NewReader(body, params["boundary"])
	var files []uploadedFile
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, uploadCause(err)
		}
		switch field := part.FormName(); {
		case field == csrfField && part.FileName() == "":
			got, err := io.ReadAll(io.LimitReader(part, 256))
			if err != nil {
				return nil, uploadCause(err)
			}
			if mustCheck {
				if want == "" || subtle.ConstantTimeCompare(got, []byte(want)) != 1 {
					return nil, &domain.ForbiddenError{Reason: mustText("err.csrf")}
				}
				mustCheck = false
			}
		case mustCheck:
			return nil, &domain.ForbiddenError{Reason: mustText("err.csrf")}
		case field == "file":
			if part.FileName() == "" {
				// An empty file input sends a part without a file name.
				if _, err := io.Copy(io.Discard, io.LimitReader(part, 1)); err != nil {
					return nil, uploadCause(err)
				}
				continue
			}
			if len(files) == maxFilesPerUpload {
				return nil, domain.InvalidField("file", mustText("knowledge.file.many", maxFilesPerUpload))
			}
			content, err := io.ReadAll(io.LimitReader(part, domain.MaxSourceFileBytes+1))
			if err != nil {
				return nil, uploadCause(err)
			}
			files = append(files, uploadedFile{filename: part.FileName(), content: content})
		default:
			return nil, errBadUpload
		}
	}
	if mustCheck {
		return nil, &domain.ForbiddenError{Reason: mustText("err.csrf")}
	}
	if len(files) == 0 {
		return nil, domain.InvalidField("file", mustText("knowledge.file.none"))
	}
	return files, nil
}

// uploadCause reports a body over its limit (or a client gone) as such,
// anything else as a malformed form.
func uploadCause(err error) error {
	if errors.Is(err, bodylimit.ErrTooLarge) || errors.Is(err, bodylimit.ErrBusy) {
		return err
	}
	var verr *domain.ValidationError
	if errors.As(err, &verr) {
		return err
	}
	return errBadUpload
}

// ReindexSource schedules the source's indexing again.
func (h *Handlers) ReindexSource(c *fiber.Ctx) error {
	ws, slug := member(c).WorkspaceID, strings.Clone(c.Params("slug"))
	if _, err := h.agents.Reindex(c.UserContext(), ws, slug, strings.Clone(c.Params("sourceID"))); err != nil {
		return err
	}
	return redirect(c, Prefix+"/w/"+ws+"/agents/"+slug+"/knowledge?done=reindex")
}

type confirmSource struct {
	Agent  domain.Agent
	Source domain.Source
}

// DeleteSourcePage asks to confirm deleting a source.
func (h *Handlers) DeleteSourcePage(c *fiber.Ctx) error {
	ws := member(c).WorkspaceID
	a, err := h.agents.Get(c.UserContext(), ws, c.Params("slug"))
	if err != nil {
		return err
	}
	s, err := h.agents.GetSource(c.UserContext(), ws, a.Slug, c.Params("sourceID"))
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("knowledge.delete.title", s.Name), "knowledge")
	if err != nil {
		return err
	}
	v.Data = confirmSource{Agent: a, Source: s}
	return h.render(c, fiber.StatusOK, "source-delete", v)
}

// DeleteSource removes the source; the agent stops citing it at once.
func (h *Handlers) DeleteSource(c *fiber.Ctx) error {
	ws, slug := member(c).WorkspaceID, strings.Clone(c.Params("slug"))
	if err := h.agents.DeleteSource(c.UserContext(), ws, slug, strings.Clone(c.Params("sourceID"))); err != nil {
		return err
	}
	return redirect(c, Prefix+"/w/"+ws+"/agents/"+slug+"/knowledge?done=sourcedeleted")
}
