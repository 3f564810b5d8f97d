package bodylimit

import (
	"io"
	"net"
	"sync/atomic"
	"time"
)

// How long, and for how many bytes at most, a connection given up on keeps
// reading what its client still sends before it is closed: long enough for
// a client still sending its body to see the answer, short and small enough
// to cost little.
const (
	lingerTime  = 2 * time.Second
	lingerBytes = 32 << 20
)

// Listener wraps ln so that a connection the guard gave up on (part of a
// body left unread) closes gracefully: once the answer is written, the
// server's sending side is shut and what the client still sends is read and
// dropped for a moment before the connection is closed. Closing a socket
// that holds unread data makes the kernel answer with a reset, which a
// client still sending its body may see instead of the 413.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c}, nil
}

type conn struct {
	net.Conn
	linger  atomic.Bool
	closing atomic.Bool
}

func (c *conn) lingerOnClose() { c.linger.Store(true) }

// Close closes at once, unless the guard asked this connection to linger:
// then it returns at once and a goroutine closes it gracefully.
func (c *conn) Close() error {
	if !c.linger.Load() {
		return c.Conn.Close()
	}
	if c.closing.CompareAndSwap(false, true) {
		go c.lingerAndClose()
	}
	return nil
}

func (c *conn) lingerAndClose() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.Conn, lingerBytes))
	_ = c.Conn.Close()
}
