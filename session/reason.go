package session

import "github.com/skillgate/skillgate/transport"

// CloseReason says why a connection ended. Its String form is used in logs
// and as the "reason" label of skillgate_connections_closed_total.
type CloseReason uint8

// Close reasons.
const (
	ReasonNone           CloseReason = iota
	ReasonPeerClosed                 // the peer closed the connection
	ReasonParseError                 // invalid framing or JSON
	ReasonInvalidMessage             // valid JSON that is no valid message (incl. reused ids)
	ReasonFrameTimeout               // a begun frame did not complete in time
	ReasonKeepalive                  // a _Keepalive went unanswered
	ReasonInitTimeout                // the peer did not initialize in time
	ReasonInitFailed                 // too many failed initialization attempts
	ReasonOverloaded                 // the server is at its connection limit
	ReasonSlowReader                 // the peer stopped reading; its queue overflowed
	ReasonWriteFailed                // a socket write failed or timed out
	ReasonReadFailed                 // a socket read failed
	ReasonShutdown                   // the server is shutting down
	ReasonLocal                      // closed by this side's own Close
	ReasonHandshake                  // the TLS handshake failed
)

var reasonNames = [...]string{
	ReasonNone:           "none",
	ReasonPeerClosed:     "peer_closed",
	ReasonParseError:     "parse_error",
	ReasonInvalidMessage: "invalid_message",
	ReasonFrameTimeout:   "frame_timeout",
	ReasonKeepalive:      "keepalive_timeout",
	ReasonInitTimeout:    "init_timeout",
	ReasonInitFailed:     "init_failed",
	ReasonOverloaded:     "overloaded",
	ReasonSlowReader:     "slow_reader",
	ReasonWriteFailed:    "write_failed",
	ReasonReadFailed:     "read_failed",
	ReasonShutdown:       "shutdown",
	ReasonLocal:          "local_close",
	ReasonHandshake:      "tls_handshake_failed",
}

func (r CloseReason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Errors sent in _CloseReason notifications and error responses.
var (
	errKeepalive = transport.NewError(transport.CodeKeepalive, "Keepalive timeout.")
	errShutdown  = transport.AppError(transport.StringServerShutdown, "The server is shutting down.").
			WithRetry(1000, 3)
	errOverloadedConns = transport.AppError(transport.StringOverloaded, "The server is at its connection limit.").
				WithRetry(1000, 5)
	errOverloadedCalls = transport.AppError(transport.StringOverloaded, "Too many requests in flight on this connection.").
				WithRetry(50, 10)
	errOverloadedBudget = transport.AppError(transport.StringOverloaded, "The gateway holds as many unsent answers as it may; retry shortly.").
				WithRetry(200, 10)
	errInitTimeout = transport.AppError(transport.StringInitTimeout, "The connection did not initialize in time.")
	errSlowReader  = transport.AppError(transport.StringSlowReader, "The peer is not reading its responses.")
)
