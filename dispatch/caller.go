package dispatch

import (
	"context"
	"crypto/tls"
	"errors"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch/auth"
)

// Caller is the other end of a call as its front door knows it: what
// only the front can tell about who calls and how to reach them while the
// call runs. The call's deadline is its context's. dispatch knows no
// front's types; each front door implements Caller (framedfront for the
// framed transport; Front.Call builds one from a Request for the others).
type Caller interface {
	// Identity is who makes the call; a nil identity comes with the
	// reason (credentials missing or refused).
	Identity() (*auth.Identity, error)
	// RequestID is the caller's id of the request as text, echoed as
	// request_id in a run's events; "" when the caller has none.
	RequestID() string
	// Notify delivers a notification while the call runs, waiting while
	// the caller is behind. params is a Go value the front door encodes
	// at its wire (a *RunEvent for MethodRunEvent). An error ends the
	// stream; it is ErrNoStream where notifications cannot reach the
	// caller.
	Notify(ctx context.Context, method string, params any) error
	// NoStream says why notifications cannot reach the caller, in the
	// words of its front door ("" when they can).
	NoStream() string
	// Describe tags a log event with who the caller is: its front door,
	// connection and address.
	Describe(e *zerolog.Event) *zerolog.Event
}

// Backpressured is a Caller whose notifications share a queue the caller
// may fall behind on (a framed connection's): a sender that would rather
// compact what it sends than wait asks first.
type Backpressured interface {
	// TryNotify is Notify that does not wait: it sends nothing and
	// returns ErrBackpressure while the caller is behind.
	TryNotify(method string, params any) error
	// Backlogged reports whether notifications wait for the caller to
	// read them.
	Backlogged() bool
}

// SessionCaller is the Caller of a connection-oriented front door, on
// which Initialize establishes who the connection is (its only way in)
// and every later call is checked against the current auth file.
type SessionCaller interface {
	Caller
	// TLS is the connection's TLS state (its verified client
	// certificate), nil on plain TCP.
	TLS() *tls.ConnectionState
	// Establish records the identity Initialize authenticated and the
	// connection slot it holds, freeing a slot held before; release frees
	// this one. On a connection that has closed it frees the slot and
	// fails.
	Establish(id *auth.Identity, release func()) error
	// Revalidated replaces the connection's identity old with fresh (the
	// auth file was reloaded) unless another one took its place.
	Revalidated(old, fresh *auth.Identity)
}

// Detacher is a Caller a front door recycles once the call returns: what
// a background run keeps of it must be detached first.
type Detacher interface {
	// Detach returns a Caller that only describes the caller in logs and
	// stays valid after the call.
	Detach() Caller
}

var (
	// ErrNoStream is Notify's error where the call's front door cannot
	// deliver notifications: an HTTP request without Accept:
	// text/event-stream, a batch member, a notification.
	ErrNoStream = errors.New("dispatch: this call cannot receive notifications")
	// ErrBackpressure is TryNotify's answer while the caller is behind.
	ErrBackpressure = errors.New("dispatch: the caller is behind on its notifications")
)

// requestCaller is the Caller of a Request, the front doors that know the
// identity per request (POST /rpc, MCP).
type requestCaller struct {
	r     Request
	front string
}

func (c *requestCaller) Identity() (*auth.Identity, error) {
	if c.r.Identity == nil && c.r.AuthErr == nil {
		return nil, auth.ErrNoCredentials
	}
	return c.r.Identity, c.r.AuthErr
}

func (c *requestCaller) RequestID() string { return c.r.ID }

func (c *requestCaller) Notify(ctx context.Context, method string, params any) error {
	if c.r.Notify == nil {
		return ErrNoStream
	}
	return c.r.Notify(ctx, method, params)
}

func (c *requestCaller) NoStream() string {
	switch {
	case c.r.Notify != nil:
		return ""
	case c.r.NoStream != "":
		return c.r.NoStream
	}
	return "cannot be delivered on this connection"
}

func (c *requestCaller) Describe(e *zerolog.Event) *zerolog.Event {
	return e.Str("front", c.front).Str("remote", c.r.Remote)
}

// described keeps what a background run needs of its caller: how to name
// it in logs.
type described struct{ Caller }

func (d described) Notify(context.Context, string, any) error { return ErrNoStream }
func (described) NoStream() string                            { return "the run is in the background" }

// detach returns what of c a background run may keep.
func detach(c Caller) Caller {
	if d, ok := c.(Detacher); ok {
		c = d.Detach()
	}
	return described{c}
}
