package framedfront

import (
	"sync"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/session"
)

// ConnState is what the front door keeps for one framed connection: the
// identity Initialize established and the identity's connection slot the
// connection holds. It is created when the connection is accepted (Bind)
// and torn down once it closes (Closed). The connection's streams and
// watch_run calls end with it through their requests' contexts.
type ConnState struct {
	mu      sync.Mutex
	id      *auth.Identity // guarded by mu; nil until Initialize succeeds
	release func()         // guarded by mu; frees the connection slot
	closed  bool           // guarded by mu
}

// Identity returns who the connection is, or nil before Initialize.
func (s *ConnState) Identity() *auth.Identity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// authenticated records the identity Initialize established and the slot
// it holds, freeing a slot held before. On a connection that has already
// closed the slot is freed at once and false is returned.
func (s *ConnState) authenticated(id *auth.Identity, release func()) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		release()
		return false
	}
	old := s.release
	s.id, s.release = id, release
	s.mu.Unlock()
	if old != nil {
		old()
	}
	return true
}

// revalidated replaces the identity with a fresh copy of itself (the auth
// file was reloaded) unless another one took its place meanwhile.
func (s *ConnState) revalidated(old, fresh *auth.Identity) {
	s.mu.Lock()
	if s.id == old {
		s.id = fresh
	}
	s.mu.Unlock()
}

// Closed tears the connection's state down: the identity is forgotten and
// its connection slot freed. It implements session.ConnState.
func (s *ConnState) Closed() {
	s.mu.Lock()
	release := s.release
	s.id, s.release, s.closed = nil, nil, true
	s.mu.Unlock()
	if release != nil {
		release()
	}
}

// BudgetOwner names the identity a framed connection's queued answers are
// charged to, so that one identity's connections can hold only their share
// of the gateway-wide budget (--identity-queued-share of
// --max-total-queued-bytes). The session asks right after Initialize
// succeeded. It implements session.BudgetOwner.
func (s *ConnState) BudgetOwner() string {
	if id := s.Identity(); id != nil {
		return id.Name()
	}
	return ""
}

var (
	_ session.ConnState   = (*ConnState)(nil)
	_ session.BudgetOwner = (*ConnState)(nil)
)
