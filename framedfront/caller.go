package framedfront

import (
	"context"
	"crypto/tls"
	"errors"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/session"
)

// caller is a framed request's caller: its connection, whose state holds
// who it is, and the request, whose id it has. req is nil once detached.
type caller struct {
	conn *session.Conn
	req  *session.Request
}

// errUnbound is Initialize's error on a connection whose session was not
// given the Handler as its Binder (a wiring error).
var errUnbound = errors.New("framedfront: the connection has no front-door state")

func (c *caller) state() *ConnState {
	s, _ := c.conn.State().(*ConnState)
	return s
}

func (c *caller) Identity() (*auth.Identity, error) {
	var id *auth.Identity
	if s := c.state(); s != nil {
		id = s.Identity()
	}
	if id == nil {
		return nil, auth.ErrNoCredentials
	}
	return id, nil
}

func (c *caller) RequestID() string {
	if c.req == nil {
		return ""
	}
	return c.req.ID()
}

// Notify queues a notification on the connection, waiting while its queue
// is past the notifications' share (session.Conn.Notify).
func (c *caller) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

func (c *caller) TryNotify(method string, params any) error {
	err := c.conn.TryNotify(method, params)
	if errors.Is(err, session.ErrBackpressure) {
		return dispatch.ErrBackpressure
	}
	return err
}

func (c *caller) Backlogged() bool { return c.conn.Backlogged() }

func (*caller) NoStream() string { return "" }

func (c *caller) Describe(e *zerolog.Event) *zerolog.Event { return c.conn.Tag(e) }

func (c *caller) TLS() *tls.ConnectionState { return c.conn.TLSState() }

func (c *caller) Establish(id *auth.Identity, release func()) error {
	s := c.state()
	if s == nil {
		release()
		return errUnbound
	}
	if !s.authenticated(id, release) {
		return session.ErrClosed
	}
	return nil
}

func (c *caller) Revalidated(old, fresh *auth.Identity) {
	if s := c.state(); s != nil {
		s.revalidated(old, fresh)
	}
}

// Detach keeps the connection, which outlives the request.
func (c *caller) Detach() dispatch.Caller { return &caller{conn: c.conn} }

var (
	_ dispatch.SessionCaller = (*caller)(nil)
	_ dispatch.Backpressured = (*caller)(nil)
	_ dispatch.Detacher      = (*caller)(nil)
)
