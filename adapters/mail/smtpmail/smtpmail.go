// Package smtpmail sends the account service's mail (invitations, password
// resets) through an SMTP server, with the standard library's net/smtp:
// STARTTLS whenever the server offers it (smtp://), or TLS from the first
// byte (smtps://), and PLAIN authentication, which net/smtp refuses to send
// over an unencrypted connection except to localhost.
//
// net/smtp is frozen but complete for sending one message to one recipient,
// which is all Concierge does; a library such as go-mail would add a
// dependency for features (attachments, connection pools, S/MIME) we do not use.
package smtpmail

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Options configure a Mailer.
type Options struct {
	// URL is smtp://[user:pass@]host[:port] (port 587 by default; STARTTLS
	// when offered) or smtps://[user:pass@]host[:port] (port 465; TLS).
	URL string
	// From is the sender, an address with or without a display name.
	From string
	// Timeout bounds one Send, from dialling to QUIT (default 30 s), when
	// the caller's context has no earlier deadline.
	Timeout time.Duration
	// TLSConfig, when set, is used for STARTTLS and smtps (tests pass one
	// trusting their own certificate); ServerName defaults to the host.
	TLSConfig *tls.Config
	// RequireTLS refuses to send when an smtp:// server does not offer
	// STARTTLS (default: send in the clear to such a server, as with a
	// relay on localhost).
	RequireTLS bool
}

// Mailer sends mail through one SMTP server. It opens a connection per
// message: invitations and resets are rare, and a held connection would only
// time out on the server.
type Mailer struct {
	addr, host   string
	implicitTLS  bool
	requireTLS   bool
	user, pass   string
	from         mail.Address
	timeout      time.Duration
	tlsConfig    *tls.Config
	messageIDFQD string
}

var _ ports.Mailer = (*Mailer)(nil)

// New checks the options and returns a Mailer. It does not connect.
func New(o Options) (*Mailer, error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "smtp" && u.Scheme != "smtps") {
		return nil, errors.New("smtpmail: the URL must be smtp://[user:pass@]host[:port] or smtps://...")
	}
	from, err := mail.ParseAddress(o.From)
	if err != nil {
		return nil, fmt.Errorf("smtpmail: the sender %q is not an email address", o.From)
	}
	m := &Mailer{host: u.Hostname(), implicitTLS: u.Scheme == "smtps", requireTLS: o.RequireTLS, from: *from, timeout: o.Timeout}
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "465", false: "587"}[m.implicitTLS]
	}
	m.addr = net.JoinHostPort(m.host, port)
	if u.User != nil {
		m.user = u.User.Username()
		m.pass, _ = u.User.Password()
	}
	if m.timeout <= 0 {
		m.timeout = 30 * time.Second
	}
	if o.TLSConfig != nil {
		m.tlsConfig = o.TLSConfig.Clone()
	} else {
		m.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if m.tlsConfig.ServerName == "" {
		m.tlsConfig.ServerName = m.host
	}
	if _, domainPart, ok := strings.Cut(from.Address, "@"); ok {
		m.messageIDFQD = domainPart
	}
	return m, nil
}

// Send delivers one message. Returns an error wrapping domain.ErrInvalidInput
// if the recipient is not an address, and domain.ErrUnavailable if the server
// cannot be reached or refuses the message.
func (m *Mailer) Send(ctx context.Context, e domain.Email) error {
	to, err := domain.NormalizeEmail(e.To)
	if err != nil {
		return err
	}
	msg, err := m.compose(to, e)
	if err != nil {
		return err
	}
	if err := m.deliver(ctx, to, msg); err != nil {
		return domain.Unavailable("smtp: send to "+m.addr, err)
	}
	return nil
}

func (m *Mailer) deliver(ctx context.Context, to string, msg []byte) error {
	deadline := time.Now().Add(m.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dialer := &net.Dialer{Deadline: deadline}
	var conn net.Conn
	var err error
	if m.implicitTLS {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: m.tlsConfig}).DialContext(ctx, "tcp", m.addr)
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", m.addr)
	}
	if err != nil {
		return err
	}
	// net/smtp knows no contexts: the deadline bounds a stuck server and
	// closing the connection ends the exchange when ctx is cancelled.
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	c, err := smtp.NewClient(conn, m.host)
	if err != nil {
		_ = conn.Close()
		return err
	}
	defer func() { _ = c.Close() }()
	if err := c.Hello(m.helloName()); err != nil {
		return err
	}
	if !m.implicitTLS {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(m.tlsConfig); err != nil {
				return fmt.Errorf("STARTTLS: %w", err)
			}
		} else if m.requireTLS {
			return errors.New("the server does not offer STARTTLS and TLS is required")
		}
	}
	if m.user != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("a user is configured but the server offers no authentication")
		}
		if err := c.Auth(smtp.PlainAuth("", m.user, m.pass, m.host)); err != nil {
			return fmt.Errorf("authentication: %w", err)
		}
	}
	if err := c.Mail(m.from.Address); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// helloName is the name we give in EHLO: the sender's domain, a name the
// server can at least relate to the mail, rather than net/smtp's "localhost".
func (m *Mailer) helloName() string {
	if m.messageIDFQD != "" {
		return m.messageIDFQD
	}
	return "localhost"
}

// compose writes the message: headers (the subject encoded as RFC 2047
// words, so no header text can break a line) and a quoted-printable UTF-8
// text body, with the HTML alternative when there is one.
func (m *Mailer) compose(to string, e domain.Email) ([]byte, error) {
	if strings.TrimSpace(e.Subject) == "" || e.Text == "" {
		return nil, domain.Invalid("an email needs a subject and a text body")
	}
	var b bytes.Buffer
	h := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	h("From", m.from.String())
	h("To", (&mail.Address{Address: to}).String())
	h("Subject", mime.QEncoding.Encode("utf-8", e.Subject))
	h("Date", time.Now().UTC().Format(time.RFC1123Z))
	h("Message-ID", "<"+domain.NewID("")+"@"+m.helloName()+">")
	h("MIME-Version", "1.0")
	if e.HTML == "" {
		h("Content-Type", "text/plain; charset=utf-8")
		h("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		if err := writeQP(&b, e.Text); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct{ typ, text string }{{"text/plain", e.Text}, {"text/html", e.HTML}} {
		w, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.typ + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		if err := writeQP(w, part.text); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	h("Content-Type", "multipart/alternative; boundary="+mw.Boundary())
	b.WriteString("\r\n")
	b.Write(body.Bytes())
	return b.Bytes(), nil
}

func writeQP(w io.Writer, text string) error {
	qp := quotedprintable.NewWriter(w)
	if _, err := qp.Write([]byte(text)); err != nil {
		return err
	}
	return qp.Close()
}
