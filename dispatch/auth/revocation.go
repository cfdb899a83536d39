package auth

import (
	"context"
	"sync"
)

// changes is the broadcast of a Store's new versions: a channel closed,
// and replaced, each time a version is published. A waiter takes the
// current channel before it looks at the version, so it cannot miss the
// next one.
type changes struct {
	mu sync.Mutex
	ch chan struct{} // guarded by mu; nil until first asked for
}

// next returns the channel the next version closes.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// broadcast wakes every waiter of the version just published.
func (c *changes) broadcast() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// Changed returns a channel closed when the Store next publishes a
// version: a reload, or a rejected file that disabled identities.
func (s *Store) Changed() <-chan struct{} { return s.changed.next() }

// UntilRevoked returns a context that ends when ctx does, or, with the
// *Failure as its cause, once a reload of a's auth file leaves id's
// credential authenticating no one (Revalidate fails): its token or
// certificate matcher was removed, or a rejected file disabled its
// identity. Long-lived streams (watch_run, server-sent events, MCP
// sessions) run under it, so that removing a token ends them within
// moments of the reload rather than at their next call.
//
// It rides on the Store's own change notification, so no caller has to
// relay reloads to it. The credential is checked once before it returns,
// so a reload between the authentication and the call ends the context at
// once rather than a moment later. An Authenticator without reloads (Open)
// never revokes, nor does a nil id. stop releases the watch (its
// goroutine); call it when the stream ends.
func UntilRevoked(ctx context.Context, a Authenticator, id *Identity) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancelCause(ctx)
	stop := func() { cancel(nil) }
	s, ok := a.(*Store)
	if !ok || id == nil {
		return rctx, stop
	}
	// The channel is taken before each check, so a version published
	// between the check and the wait still wakes the wait.
	next := s.Changed()
	if _, err := s.Revalidate(id); err != nil {
		cancel(err)
		return rctx, stop
	}
	go func() {
		for {
			select {
			case <-rctx.Done():
				return
			case <-next:
			}
			next = s.Changed()
			if _, err := s.Revalidate(id); err != nil {
				cancel(err)
				return
			}
		}
	}()
	return rctx, stop
}

// Revoked returns the *Failure that ended a context of UntilRevoked, or
// nil when it ended otherwise (or has not).
func Revoked(ctx context.Context) error {
	if err := context.Cause(ctx); Reason(err) != ReasonNone {
		return err
	}
	return nil
}
