// Package webhook delivers handoffs and outbound events to a workspace's
// receiver as signed HTTP POSTs following Standard Webhooks
// (https://www.standardwebhooks.com): headers webhook-id (the delivery id,
// the same on every attempt, also sent as Idempotency-Key),
// webhook-timestamp and webhook-signature ("v1," + base64 HMAC-SHA256 of
// id.timestamp.body under the workspace's signing secret), signed with the
// scheme's reference library.
//
// One adapter serves both targets: a helpdesk URL and an events URL speak
// the same protocol, so they share one signing implementation and one
// client. The client dials through adapters/safehttp's guard (no internal
// addresses, checked after DNS), ignores proxies, never follows redirects,
// bounds each attempt in time and reads at most 64 KiB of an answer.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.opentelemetry.io/otel/propagation"

	"github.com/conciergehq/concierge/adapters/openaicompat"
	"github.com/conciergehq/concierge/adapters/safehttp"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Defaults of Options.
const (
	DefaultUserAgent = "Concierge-Webhooks/1.0 (+https://github.com/conciergehq/concierge)"
	// DefaultTimeout bounds one attempt, connection to last byte read.
	DefaultTimeout = 15 * time.Second
	// maxTimeout keeps an attempt within the delivery task's 30 s limit.
	maxTimeout = 25 * time.Second
	// maxResponseBytes of an answer are read (and discarded) so the
	// connection can be reused; the rest is dropped with the connection.
	maxResponseBytes = 64 << 10
)

// Options configure a Sender. Zero values take the defaults above.
type Options struct {
	UserAgent string
	// Timeout bounds each attempt; at most 25 s.
	Timeout time.Duration
	// AllowPrivateAddresses is FOR TESTS ONLY: it lets deliveries reach
	// private and loopback addresses (an httptest receiver on 127.0.0.1)
	// and allows http URLs. Never set it in production: it reopens
	// server-side request forgery.
	AllowPrivateAddresses bool
	// Now stamps webhook-timestamp; time.Now when nil.
	Now func() time.Time
}

// Sender posts signed deliveries. It is safe for concurrent use.
type Sender struct {
	opts   Options
	guard  *safehttp.Guard
	client *http.Client
}

var (
	_ ports.Helpdesk          = (*Sender)(nil)
	_ ports.ReceiverURLPolicy = (*Sender)(nil)
)

// New returns a Sender, or an error for options out of range.
func New(opts Options) (*Sender, error) {
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Timeout < 0 || opts.Timeout > maxTimeout {
		return nil, fmt.Errorf("webhook: timeout %s is not between 0 and %s", opts.Timeout, maxTimeout)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	g := safehttp.NewGuard(opts.AllowPrivateAddresses)
	client := g.Client(safehttp.ClientOptions{Timeout: opts.Timeout, MaxIdleConns: 32, MaxIdleConnsPerHost: 4})
	// The whole attempt, body included, within the timeout. A redirect is
	// answered, not followed: a receiver that moved must be configured with
	// its new URL, and following would post the signed body to wherever the
	// redirect points.
	client.Timeout = opts.Timeout
	return &Sender{opts: opts, guard: g, client: client}, nil
}

// CheckReceiverURL returns raw normalised, or a domain.ValidationError naming
// field: it must be an absolute https URL (http too under the test-only
// relaxation) of at most 2048 characters, without user info or fragment,
// whose host is not an internal address written literally, localhost, or a
// cloud metadata service. Host names are resolved and checked at every
// attempt instead.
func (s *Sender) CheckReceiverURL(field, raw string) (string, error) {
	u, err := s.receiverURL(field, raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// receiverURL parses and checks raw as CheckReceiverURL documents.
func (s *Sender) receiverURL(field, raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, domain.InvalidField(field, "is required")
	}
	if len(raw) > domain.MaxReceiverURLLength {
		return nil, domain.InvalidField(field, fmt.Sprintf("must be at most %d characters", domain.MaxReceiverURLLength))
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.Hostname() == "" {
		return nil, domain.InvalidField(field, "must be an absolute URL such as https://helpdesk.example.com/hooks/concierge")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.guard.AllowsPrivate():
	default:
		return nil, domain.InvalidField(field, "must use https")
	}
	if u.User != nil {
		return nil, domain.InvalidField(field, "must not contain a user name or password; authenticate deliveries by their signature")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, domain.InvalidField(field, "must not contain a fragment (#...)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, domain.InvalidField(field, "the port is not valid")
		}
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if !s.guard.AllowsPrivate() && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		return nil, domain.InvalidField(field, "refused: "+host+" is a loopback address")
	}
	if err := s.guard.CheckURL(u); err != nil {
		return nil, renameField(err, field)
	}
	return u, nil
}

// renameField moves the guard's "url" reason to field.
func renameField(err error, field string) error {
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		if reason, ok := ve.Fields["url"]; ok {
			return domain.InvalidField(field, reason)
		}
	}
	return err
}

// Deliver posts d to to.URL, signed with to.SigningSecret. See
// ports.Helpdesk for the meaning of its errors; their texts name the host
// and what happened, never the path, the query, the secret or the body.
func (s *Sender) Deliver(ctx context.Context, to ports.Endpoint, d domain.Delivery) (ports.DeliveryReport, error) {
	u, err := s.receiverURL("url", to.URL)
	if err != nil {
		return ports.DeliveryReport{}, err
	}
	target, host := u.String(), u.Host
	if !domain.ValidSigningSecret(to.SigningSecret) {
		return ports.DeliveryReport{}, domain.Invalid("the workspace has no valid signing secret; rotate it with POST /api/v2/integrations/signing-secret")
	}
	signer, err := standardwebhooks.NewWebhook(to.SigningSecret)
	if err != nil {
		return ports.DeliveryReport{}, domain.Invalid("the workspace has no valid signing secret")
	}
	body, err := Body(d)
	if err != nil {
		return ports.DeliveryReport{}, err
	}
	// The timestamp is this attempt's, as Standard Webhooks requires:
	// receivers reject signatures older than a few minutes.
	now := s.opts.Now()
	signature, err := signer.Sign(d.ID, now, body)
	if err != nil {
		return ports.DeliveryReport{}, fmt.Errorf("webhook: sign delivery %s: %w", d.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return ports.DeliveryReport{}, domain.InvalidField("url", "is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opts.UserAgent)
	req.Header.Set(standardwebhooks.HeaderWebhookID, d.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, signature)
	req.Header.Set("Idempotency-Key", d.ID)
	// The receiver can join the delivery to the trace of the conversation
	// turn that caused it (W3C traceparent); outside a trace (tracing off)
	// nothing is added.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))

	resp, err := s.client.Do(req)
	if err != nil {
		return ports.DeliveryReport{}, s.requestError(ctx, host, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	// The delivery schedule caps how long a Retry-After may hold a delivery back.
	report := ports.DeliveryReport{StatusCode: resp.StatusCode, RetryAfter: openaicompat.RetryAfter(resp)}
	return report, statusError(host, resp.StatusCode)
}

// requestError says why no answer came back, without the URL net/http puts
// in its errors (its path or query may carry a receiver's token).
func (s *Sender) requestError(ctx context.Context, host string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		// The guard refused the address the host resolved to.
		return renameField(ve, "url")
	}
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return domain.Unavailable("deliver to "+host+": interrupted", ctx.Err())
	case errors.As(err, &dnsErr):
		return domain.Unavailable("deliver to "+host+": cannot resolve the host name", errors.New(dnsErr.Err))
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return domain.Unavailable(fmt.Sprintf("deliver to %s: no answer within %s", host, s.opts.Timeout), errors.New("timeout"))
	}
	return domain.Unavailable("deliver to "+host+": no answer", err)
}

// statusError maps the receiver's status to the kinds ports.Helpdesk
// documents. Retried: 408 Request Timeout, 409 Conflict (receivers use it
// for "already in progress"), 423 Locked, 425 Too Early, 429 Too Many
// Requests and every 5xx. Any other 3xx or 4xx fails the delivery at once:
// the same request would get the same answer until someone changes the
// receiver or the URL, after which the delivery can be retried through the
// API.
func statusError(host string, code int) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusRequestTimeout, code == http.StatusConflict, code == http.StatusLocked,
		code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		return fmt.Errorf("receiver %s answered %d: %w", host, code, domain.ErrUnavailable)
	case code >= 300 && code < 400:
		return domain.Invalid("receiver %s answered %d, a redirect; redirects are not followed, so configure the URL it points to", host, code)
	}
	return domain.Invalid("receiver %s answered %d", host, code)
}
