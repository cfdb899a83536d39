package session

import "github.com/skillgate/skillgate/transport"

// CloseReasons lists every reason a connection can end for (ReasonNone
// left out), for creating metric series before their first event.
func CloseReasons() []CloseReason {
	out := make([]CloseReason, 0, len(reasonNames)-1)
	for r := ReasonNone + 1; int(r) < len(reasonNames); r++ {
		out = append(out, r)
	}
	return out
}

// abortCodes are the string codes a _CloseReason abort carries (an
// initialization that failed too often carries its last failure's).
var abortCodes = []string{
	transport.StringParseError, transport.StringInvalidRequest, errKeepalive.EffectiveCode(),
	errInitTimeout.EffectiveCode(), errShutdown.EffectiveCode(), errSlowReader.EffectiveCode(),
}

// notificationNames are the values of the notifications' "method" label.
var notificationNames = []string{transport.MethodInfo, transport.MethodError, transport.MethodCloseReason, "other"}

// PresetMetrics creates, at zero, the series a framed listener named
// listener will record and those of the server as a whole, so that
// dashboards and alerts see them from the start rather than after their
// first event. Call it before serving the listener; calling it again is
// harmless.
func (s *Server) PresetMetrics(listener string) {
	mt := s.cfg.Metrics
	mt.ConnectionsActive.WithLabelValues(listener)
	mt.ConnectionsAccepted.WithLabelValues(listener)
	for _, r := range CloseReasons() {
		mt.ConnectionsClosed.WithLabelValues(listener, r.String())
	}
	mt.ConnectionsRejected.WithLabelValues(listener, ReasonOverloaded.String())
	for _, c := range abortCodes {
		mt.Aborts.WithLabelValues(c)
	}
	for _, n := range notificationNames {
		mt.Notifications.WithLabelValues(n)
	}
}
