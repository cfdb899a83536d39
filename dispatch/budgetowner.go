package dispatch

import "github.com/skillgate/skillgate/session"

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

var _ session.BudgetOwner = (*ConnState)(nil)
