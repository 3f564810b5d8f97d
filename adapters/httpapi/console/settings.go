package console

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
)

// The settings pages need domain.PermSettings (owners and admins); the
// webhook secret needs domain.PermSecrets (owners only), and is shown only
// after the password is entered again, so a session left open on a shared
// screen does not hand out the secret that authenticates inbound webhooks.
// Every secret (a new API key, the webhook secret, a new signing secret)
// is shown by the one GET the POST that made or revealed it redirects to,
// and by no other answer (reveal.go): a reload neither shows it again nor
// makes another, and pages are Cache-Control: no-store, so the back button
// does not show it either.

// maxKeyName is the longest API key name workspace.Service accepts; the
// form says so before the service has to.
const maxKeyName = 100

// maxReceiverURL is the longest helpdesk or events URL, as the v2 API
// allows (its body validation).
const maxReceiverURL = domain.MaxReceiverURLLength

// deliveryPageSize is how many deliveries one page of the log shows.
const deliveryPageSize = 50

// graces are the grace periods offered when rotating the webhook secret,
// in the order shown; the keys are the form's values.
var graces = []struct {
	Key string
	D   time.Duration
}{{"none", 0}, {"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}

// parseGrace reads a grace choice; anything not offered is a field error.
func parseGrace(s string) (time.Duration, error) {
	for _, g := range graces {
		if g.Key == s {
			return g.D, nil
		}
	}
	return 0, domain.InvalidField("grace", mustText("secret.grace.bad"))
}

// planFeatures are the features the plan page lists, in the order PRODUCT.md
// names them. The domain keeps its table unexported; a test checks each
// has its words in the string table.
var planFeatures = []domain.Feature{
	domain.FeatureWidget, domain.FeatureAPIAccess, domain.FeatureToolCalling, domain.FeatureHandoff,
	domain.FeatureIdentityVerification, domain.FeatureWhiteLabel,
}

// deliveryService is the delivery use case, or 503 when the console was
// built without it.
func (h *Handlers) deliveryService() (Deliveries, error) {
	if h.deliveries == nil {
		return nil, domain.Unavailable("delivery service", errors.New("console built without Options.Deliveries"))
	}
	return h.deliveries, nil
}

// SettingsPage links every settings page the member may open.
func (h *Handlers) SettingsPage(c *fiber.Ctx) error {
	v, err := h.newView(c, mustText("settings.title"), "settings")
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "settings", v)
}

// API keys

type apiKeysPage struct {
	Keys []domain.APIKey
	// Name keeps the create form's value after a refusal.
	Name string
	// Created and Secret are the key just made, shown once after the
	// redirect from CreateAPIKey.
	Created *domain.APIKey
	Secret  string
}

func (h *Handlers) apiKeysView(c *fiber.Ctx) (*view, *apiKeysPage, error) {
	v, err := h.newView(c, mustText("keys.title"), "keys")
	if err != nil {
		return nil, nil, err
	}
	keys, err := h.workspaces.ListAPIKeys(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return nil, nil, err
	}
	pg := &apiKeysPage{Keys: keys}
	v.Data = pg
	return v, pg, nil
}

// APIKeysPage lists the workspace's keys with the create form, and the
// secret of the key just made when it is shown for the first time.
func (h *Handlers) APIKeysPage(c *fiber.Ctx) error {
	v, pg, err := h.apiKeysView(c)
	if err != nil {
		return err
	}
	r, err := h.takeReveal(c, v, revealAPIKey)
	if err != nil {
		return err
	}
	if r != nil {
		pg.Created, pg.Secret = &domain.APIKey{Name: r.Name}, r.Secret
	}
	return h.render(c, fiber.StatusOK, "apikeys", v)
}

// CreateAPIKey makes a key and redirects to the page that shows its
// secret, once. The service names an empty name "default"; a person who
// left the field empty most likely forgot it, so the console asks for one
// instead.
func (h *Handlers) CreateAPIKey(c *fiber.Ctx) error {
	if err := h.revealStore(); err != nil {
		return err
	}
	name := strings.TrimSpace(formValue(c, "name"))
	var err error
	switch {
	case name == "":
		err = domain.InvalidField("name", mustText("keys.name.required"))
	case len([]rune(name)) > maxKeyName:
		err = domain.InvalidField("name", mustText("keys.name.long", maxKeyName))
	}
	var (
		key    domain.APIKey
		secret string
	)
	if err == nil {
		key, secret, err = h.workspaces.CreateAPIKey(c.UserContext(), member(c).WorkspaceID, name)
	}
	v, pg, verr := h.apiKeysView(c)
	if verr != nil {
		return verr
	}
	if err != nil {
		pg.Name = name
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, statusOf(err), "apikeys", v)
	}
	ws := member(c).WorkspaceID
	return h.keepReveal(c, Prefix+"/w/"+ws+"/settings/api-keys",
		reveal{Kind: revealAPIKey, WorkspaceID: ws, Secret: secret, Name: key.Name})
}

// findKey returns the workspace's key with the id in the URL.
func (h *Handlers) findKey(c *fiber.Ctx) (domain.APIKey, error) {
	keys, err := h.workspaces.ListAPIKeys(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return domain.APIKey{}, err
	}
	for _, k := range keys {
		if k.ID == c.Params("keyID") {
			return k, nil
		}
	}
	return domain.APIKey{}, domain.NotFound("API key")
}

// RevokeKeyPage asks to confirm revoking a key.
func (h *Handlers) RevokeKeyPage(c *fiber.Ctx) error {
	k, err := h.findKey(c)
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("keys.revoke.title", k.Name), "keys")
	if err != nil {
		return err
	}
	v.Data = k
	return h.render(c, fiber.StatusOK, "apikey-revoke", v)
}

// RevokeAPIKey revokes the key: programs using it are refused from now on.
func (h *Handlers) RevokeAPIKey(c *fiber.Ctx) error {
	ws := member(c).WorkspaceID
	if _, err := h.findKey(c); err != nil {
		return err
	}
	if _, err := h.workspaces.RevokeAPIKey(c.UserContext(), ws, strings.Clone(c.Params("keyID"))); err != nil {
		return err
	}
	return redirect(c, Prefix+"/w/"+ws+"/settings/api-keys?done=keyrevoked")
}

// Webhook secret

type secretPage struct {
	// Secret is shown only by the GET the reveal or rotation redirected to.
	Secret string
	// Rotated says Secret was just made.
	Rotated bool
	// PreviousUntil is when the previous secret stops being accepted,
	// zero when it no longer is.
	PreviousUntil time.Time
	Graces        []string
	Grace         string
}

func (h *Handlers) secretView(c *fiber.Ctx, title string) (*view, *secretPage, error) {
	v, err := h.newView(c, title, "secret")
	if err != nil {
		return nil, nil, err
	}
	pg := &secretPage{Grace: "24h"}
	for _, g := range graces {
		pg.Graces = append(pg.Graces, g.Key)
	}
	if ws := v.Workspace; ws.PreviousWebhookSecret != "" && time.Now().Before(ws.PreviousSecretExpiresAt) {
		pg.PreviousUntil = ws.PreviousSecretExpiresAt
	}
	v.Data = pg
	return v, pg, nil
}

// WebhookSecretPage shows that a secret exists, hidden, with the forms to
// reveal and rotate it; once after a reveal or a rotation, the secret.
func (h *Handlers) WebhookSecretPage(c *fiber.Ctx) error {
	v, pg, err := h.secretView(c, mustText("secret.title"))
	if err != nil {
		return err
	}
	r, err := h.takeReveal(c, v, revealWebhook)
	if err != nil {
		return err
	}
	if r != nil {
		pg.Secret, pg.Rotated = r.Secret, r.Notice == "secret.rotated"
	}
	return h.render(c, fiber.StatusOK, "webhook-secret", v)
}

// toWebhookSecret redirects to the page that shows the secret once.
func (h *Handlers) toWebhookSecret(c *fiber.Ctx, secret, notice string) error {
	ws := member(c).WorkspaceID
	return h.keepReveal(c, Prefix+"/w/"+ws+"/settings/webhook-secret",
		reveal{Kind: revealWebhook, WorkspaceID: ws, Secret: secret, Notice: notice})
}

// confirmPassword checks the password typed again. Its refusals are shown
// on the page: a wrong password next to the field (401), throttling above
// the form (429 with Retry-After); ok is false then.
func (h *Handlers) confirmPassword(c *fiber.Ctx, v *view) (ok bool, status int, err error) {
	err = h.accounts.ConfirmPassword(c.UserContext(), principal(c).User.ID, c.FormValue("password"))
	var rl *domain.RateLimitError
	switch {
	case err == nil:
		return true, 0, nil
	case errors.Is(err, domain.ErrUnauthorized):
		v.Error = mustText("form.problems")
		v.Fields = map[string]string{"password": mustText("secret.pw.wrong")}
		return false, fiber.StatusUnauthorized, nil
	case errors.As(err, &rl):
		c.Set(fiber.HeaderRetryAfter, itoa(rl.RetryAfterSeconds))
		v.Error = mustText("secret.pw.limited", rl.RetryAfterSeconds)
		return false, fiber.StatusTooManyRequests, nil
	case errors.Is(err, domain.ErrRateLimited):
		c.Set(fiber.HeaderRetryAfter, "60")
		v.Error = mustText("secret.pw.limited", 60)
		return false, fiber.StatusTooManyRequests, nil
	}
	return false, 0, err
}

// RevealWebhookSecret shows the secret, once, after the password is
// confirmed.
func (h *Handlers) RevealWebhookSecret(c *fiber.Ctx) error {
	if err := h.revealStore(); err != nil {
		return err
	}
	v, _, err := h.secretView(c, mustText("secret.title"))
	if err != nil {
		return err
	}
	ok, status, err := h.confirmPassword(c, v)
	if err != nil {
		return err
	}
	if !ok {
		return h.render(c, status, "webhook-secret", v)
	}
	return h.toWebhookSecret(c, v.Workspace.WebhookSecret, "")
}

// RotateSecretPage asks to confirm a rotation with the chosen grace, and
// for the password (the new secret is shown at once).
func (h *Handlers) RotateSecretPage(c *fiber.Ctx) error {
	key := strings.Clone(c.Query("grace"))
	if _, err := parseGrace(key); err != nil {
		v, pg, verr := h.secretView(c, mustText("secret.title"))
		if verr != nil {
			return verr
		}
		pg.Grace = ""
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "webhook-secret", v)
	}
	v, pg, err := h.secretView(c, mustText("secret.rotate.title"))
	if err != nil {
		return err
	}
	pg.Grace = key
	return h.render(c, fiber.StatusOK, "webhook-rotate", v)
}

// RotateWebhookSecret makes a new secret after the password is confirmed
// and shows it once; the old one stays valid for the grace period.
func (h *Handlers) RotateWebhookSecret(c *fiber.Ctx) error {
	if err := h.revealStore(); err != nil {
		return err
	}
	key := formValue(c, "grace")
	grace, gerr := parseGrace(key)
	v, pg, err := h.secretView(c, mustText("secret.rotate.title"))
	if err != nil {
		return err
	}
	pg.Grace = key
	if gerr != nil {
		if ferr := formError(v, gerr); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "webhook-rotate", v)
	}
	ok, status, err := h.confirmPassword(c, v)
	if err != nil {
		return err
	}
	if !ok {
		return h.render(c, status, "webhook-rotate", v)
	}
	ws, err := h.workspaces.RotateWebhookSecret(c.UserContext(), member(c).WorkspaceID, grace)
	if err != nil {
		return err
	}
	return h.toWebhookSecret(c, ws.WebhookSecret, "secret.rotated")
}

// Integrations

type integrationsPage struct {
	HelpdeskURL, EventsURL string
	SigningSecretSet       bool
	// NewSecret is a signing secret just made, shown once after the
	// redirect from the POST that made it.
	NewSecret string
	// HandoffAllowed says the plan lets handoffs go to a helpdesk URL;
	// HandoffPlan is the smallest plan that does.
	HandoffAllowed bool
	HandoffPlan    string
	// AutoAssign says handed-off conversations go to an available member.
	AutoAssign bool
}

func (h *Handlers) integrationsView(c *fiber.Ctx, d Deliveries) (*view, *integrationsPage, *domain.Workspace, error) {
	v, err := h.newView(c, mustText("integrations.title"), "integrations")
	if err != nil {
		return nil, nil, nil, err
	}
	ws, err := d.Integrations(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return nil, nil, nil, err
	}
	pg := &integrationsPage{
		HelpdeskURL: ws.HelpdeskURL, EventsURL: ws.EventsURL, SigningSecretSet: ws.SigningSecret != "",
		HandoffAllowed: ws.Allows(domain.FeatureHandoff), HandoffPlan: domain.MinimumPlanFor(domain.FeatureHandoff).Title(),
		AutoAssign: ws.AutoAssign,
	}
	v.Data = pg
	return v, pg, &ws, nil
}

// IntegrationsPage shows where handoffs and events go, and once after it
// was made, the new signing secret.
func (h *Handlers) IntegrationsPage(c *fiber.Ctx) error {
	d, err := h.deliveryService()
	if err != nil {
		return err
	}
	v, pg, _, err := h.integrationsView(c, d)
	if err != nil {
		return err
	}
	r, err := h.takeReveal(c, v, revealSigning)
	if err != nil {
		return err
	}
	if r != nil {
		pg.NewSecret = r.Secret
	}
	return h.render(c, fiber.StatusOK, "integrations", v)
}

// toSigningSecret redirects to the page that shows a new signing secret
// once.
func (h *Handlers) toSigningSecret(c *fiber.Ctx, secret, notice string) error {
	ws := member(c).WorkspaceID
	return h.keepReveal(c, Prefix+"/w/"+ws+"/settings/integrations",
		reveal{Kind: revealSigning, WorkspaceID: ws, Secret: secret, Notice: notice})
}

// SaveIntegrations sets both URLs ("" clears one). The use case checks
// them as for the v2 API (https, no internal address) and names the field
// at fault; the first URL gets the workspace its signing secret, shown
// here once.
func (h *Handlers) SaveIntegrations(c *fiber.Ctx) error {
	d, err := h.deliveryService()
	if err != nil {
		return err
	}
	if err := h.revealStore(); err != nil {
		return err
	}
	helpdesk := strings.TrimSpace(formValue(c, "helpdeskUrl"))
	events := strings.TrimSpace(formValue(c, "eventsUrl"))
	v, pg, ws, err := h.integrationsView(c, d)
	if err != nil {
		return err
	}
	tooLong := mustText("integrations.url.long", maxReceiverURL)
	switch {
	case len(helpdesk) > maxReceiverURL:
		err = domain.InvalidField("helpdeskUrl", tooLong)
	case len(events) > maxReceiverURL:
		err = domain.InvalidField("eventsUrl", tooLong)
	}
	var secret string
	if err == nil {
		// Only what changed is sent: a helpdesk URL kept from a larger plan
		// stays while the events URL is edited after a downgrade.
		change := delivery.IntegrationsChange{}
		if helpdesk != ws.HelpdeskURL {
			change.HelpdeskURL = &helpdesk
		}
		if events != ws.EventsURL {
			change.EventsURL = &events
		}
		_, secret, err = d.SetIntegrations(c.UserContext(), ws, change)
	}
	if err != nil {
		pg.HelpdeskURL, pg.EventsURL = helpdesk, events
		var plan *domain.PlanError
		if errors.As(err, &plan) {
			v.Fields = map[string]string{"helpdeskUrl": mustText("integrations.helpdesk.plan", plan.Plan.Title(), domain.MinimumPlanFor(plan.Feature).Title())}
			v.Error = mustText("form.problems")
			return h.render(c, fiber.StatusForbidden, "integrations", v)
		}
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, statusOf(err), "integrations", v)
	}
	if secret == "" {
		return redirect(c, Prefix+"/w/"+member(c).WorkspaceID+"/settings/integrations?done=integrations")
	}
	return h.toSigningSecret(c, secret, "integrations.saved")
}

// SaveAutoAssign serves POST .../settings/integrations/auto-assign: the
// switch that turns auto-assignment of handed-off conversations on
// (autoAssign=true) or off (false). It is a form of its own, not a field
// of the URLs' form, so flipping it never re-sends URLs being edited.
// Owners and admins only, as every setting.
func (h *Handlers) SaveAutoAssign(c *fiber.Ctx) error {
	d, err := h.deliveryService()
	if err != nil {
		return err
	}
	var on bool
	switch c.FormValue("autoAssign") {
	case "true":
		on = true
	case "false":
	default:
		return domain.InvalidField("autoAssign", mustText("autoassign.bad"))
	}
	ws, err := d.Integrations(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return err
	}
	if _, _, err := d.SetIntegrations(c.UserContext(), &ws, delivery.IntegrationsChange{AutoAssign: &on}); err != nil {
		return err
	}
	done := "autoassignoff"
	if on {
		done = "autoassignon"
	}
	return redirect(c, Prefix+"/w/"+member(c).WorkspaceID+"/settings/integrations?done="+done)
}

// RotateSigningPage asks to confirm replacing the signing secret.
func (h *Handlers) RotateSigningPage(c *fiber.Ctx) error {
	v, err := h.newView(c, mustText("signing.rotate.title"), "integrations")
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "signing-rotate", v)
}

// RotateSigningSecret replaces the signing secret and shows the new one,
// once. It applies at once: receivers must switch to it.
func (h *Handlers) RotateSigningSecret(c *fiber.Ctx) error {
	d, err := h.deliveryService()
	if err != nil {
		return err
	}
	if err := h.revealStore(); err != nil {
		return err
	}
	ws, err := d.RotateSigningSecret(c.UserContext(), member(c).WorkspaceID)
	if err != nil {
		return err
	}
	return h.toSigningSecret(c, ws.SigningSecret, "signing.rotated")
}

// Delivery log

type deliveriesPage struct {
	Items []domain.Delivery
	// Target, Status and Type are the filter as asked; Next is the URL
	// of the next page, "" on the last (a whole URL: html/template would
	// escape the "=" and "&" of a query put after a "?").
	Target, Status, Type string
	Next                 string
	Targets              []domain.DeliveryTarget
	Statuses             []domain.DeliveryStatus
	Types                []string
}

// DeliveriesPage lists deliveries, newest first, filtered as the v2 API
// allows (target, status, event type) and paged by the same cursors.
func (h *Handlers) DeliveriesPage(c *fiber.Ctx) error {
	d, err := h.deliveryService()
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("deliveries.title"), "deliveries")
	if err != nil {
		return err
	}
	filter := domain.DeliveryFilter{
		Target: domain.DeliveryTarget(strings.Clone(c.Query("target"))),
		Status: domain.DeliveryStatus(strings.Clone(c.Query("status"))),
		Type:   strings.Clone(c.Query("type")),
	}
	pg := &deliveriesPage{
		Target: string(filter.Target), Status: string(filter.Status), Type: filter.Type,
		Targets:  []domain.DeliveryTarget{domain.TargetHelpdesk, domain.TargetEvents},
		Statuses: []domain.DeliveryStatus{domain.DeliveryPending, domain.DeliveryDelivered, domain.DeliveryFailed},
		Types:    domain.EventTypes,
	}
	v.Data = pg
	scope := "console-deliveries|target=" + pg.Target + "|status=" + pg.Status + "|type=" + pg.Type
	page, err := wire.Page(c, scope, domain.PrefixDelivery)
	if err == nil {
		page.Limit = deliveryPageSize
		var got domain.Page[domain.Delivery]
		got, err = d.List(c.UserContext(), member(c).WorkspaceID, filter, page)
		if err == nil {
			pg.Items = got.Items
			list := wire.NewList(got, scope, func(x domain.Delivery) domain.Delivery { return x })
			if list.Meta.NextCursor != nil {
				pg.Next = fmt.Sprintf(Prefix+"/w/%s/settings/deliveries?target=%s&status=%s&type=%s&cursor=%s", member(c).WorkspaceID, url.QueryEscape(pg.Target), url.QueryEscape(pg.Status),
					url.QueryEscape(pg.Type), url.QueryEscape(*list.Meta.NextCursor))
			}
		}
	}
	if err != nil {
		if ferr := formError(v, err); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "deliveries", v)
	}
	return h.render(c, fiber.StatusOK, "deliveries", v)
}

type deliveryPage struct {
	Delivery domain.Delivery
	Attempts []domain.DeliveryAttempt
}

func (h *Handlers) deliveryView(c *fiber.Ctx, d Deliveries) (*view, error) {
	del, attempts, err := d.Get(c.UserContext(), member(c).WorkspaceID, c.Params("deliveryID"))
	if err != nil {
		return nil, err
	}
	v, err := h.newView(c, mustText("delivery.title", del.Type), "deliveries")
	if err != nil {
		return nil, err
	}
	v.Data = deliveryPage{Delivery: del, Attempts: attempts}
	return v, nil
}

// DeliveryPage shows one delivery with every attempt.
func (h *Handlers) DeliveryPage(c *fiber.Ctx) error {
	d, err := h.deliveryService()
	if err != nil {
		return err
	}
	v, err := h.deliveryView(c, d)
	if err != nil {
		return err
	}
	return h.render(c, fiber.StatusOK, "delivery", v)
}

// RetryDelivery sends a FAILED delivery again. It is not destructive (the
// receiver deduplicates by the same idempotency key), so it asks no
// confirmation; a delivery that is not FAILED is refused on its page.
func (h *Handlers) RetryDelivery(c *fiber.Ctx) error {
	d, err := h.deliveryService()
	if err != nil {
		return err
	}
	ws, id := member(c).WorkspaceID, strings.Clone(c.Params("deliveryID"))
	_, err = d.Retry(c.UserContext(), ws, id)
	if err == nil {
		return redirect(c, Prefix+"/w/"+ws+"/settings/deliveries/"+id+"?done=retried")
	}
	if !isConflict(err) {
		return err
	}
	v, verr := h.deliveryView(c, d)
	if verr != nil {
		return verr
	}
	v.Error = mustText("delivery.retry.conflict")
	return h.render(c, fiber.StatusConflict, "delivery", v)
}

// Plan

type planRow struct {
	Feature  domain.Feature
	Included bool
	// ByAddon says an add-on, not the plan, includes it.
	ByAddon bool
	MinPlan string
	// Addon says it can be bought as an add-on below its minimum plan.
	Addon bool
}

type planPage struct {
	Plan   string
	Addons []domain.Feature
	Rows   []planRow
}

// PlanPage shows the plan, its add-ons and every feature: those the plan
// lacks are listed with the smallest plan that has them, not hidden.
func (h *Handlers) PlanPage(c *fiber.Ctx) error {
	v, err := h.newView(c, mustText("plan.title"), "plan")
	if err != nil {
		return err
	}
	ws := v.Workspace
	pg := planPage{Plan: ws.Plan.Title(), Addons: ws.Addons}
	for _, f := range planFeatures {
		_, addonErr := domain.ParseAddon(string(f))
		pg.Rows = append(pg.Rows, planRow{
			Feature: f, Included: ws.Allows(f), ByAddon: ws.Allows(f) && !ws.Plan.Includes(f),
			MinPlan: domain.MinimumPlanFor(f).Title(), Addon: addonErr == nil,
		})
	}
	v.Data = pg
	return h.render(c, fiber.StatusOK, "plan", v)
}
