package session

import (
	"strconv"
	"time"

	"github.com/skillgate/skillgate/transport"
)

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

// Retry hints of the connection layer's conditions. A front door that
// meets one of them (the HTTP listener's connection limit, its answer
// budget, its shutdown) answers it with the same hint, so that a client
// backs off alike whichever door it came through; docs/protocol.md's error
// table lists them. Shared values: never modify one.
var (
	// RetryShutdown: SERVER_SHUTDOWN; reconnect, to another replica if
	// there is one.
	RetryShutdown = transport.Retry{SuggestedDelayMS: 1000, MaxAttempts: 3}
	// RetryConnLimit: OVERLOADED at a listener's connection limit
	// (--max-connections, --max-http-connections).
	RetryConnLimit = transport.Retry{SuggestedDelayMS: 1000, MaxAttempts: 5}
	// RetryInflight: OVERLOADED at a connection's --max-inflight; a call
	// of the connection ends soon.
	RetryInflight = transport.Retry{SuggestedDelayMS: 50, MaxAttempts: 10}
	// RetryBudget: OVERLOADED while the gateway-wide answer budget
	// (--max-total-queued-bytes), or an identity's share of it, is full;
	// it drains as answers are written.
	RetryBudget = transport.Retry{SuggestedDelayMS: 200, MaxAttempts: 10}
)

// Errors sent in _CloseReason notifications and error responses.
var (
	errKeepalive = transport.NewError(transport.CodeKeepalive, "Keepalive timeout.")
	errShutdown  = transport.AppError(transport.StringServerShutdown, "The server is shutting down.").
			WithRetryHint(RetryShutdown)
	errOverloadedConns = transport.AppError(transport.StringOverloaded, "The server is at its connection limit.").
				WithRetryHint(RetryConnLimit)
	errOverloadedCalls = transport.AppError(transport.StringOverloaded, "Too many requests in flight on this connection.").
				WithRetryHint(RetryInflight)
	errOverloadedBudget = transport.AppError(transport.StringOverloaded, "The gateway holds as many unsent answers as it may; retry shortly.").
				WithRetryHint(RetryBudget)
	errInitTimeout = transport.AppError(transport.StringInitTimeout, "The connection did not initialize in time.")
	errSlowReader  = transport.AppError(transport.StringSlowReader, "The peer is not reading its responses.")
)

// The errors of the _CloseReason notifications that end a connection. Each
// carries details and, in its data, the numbers behind it, so that the peer
// (and whoever reads its logs) learns which limit it ran into.

// slowReaderError: a frame of frameBytes did not fit beside the queued
// bytes under the connection's bound.
func slowReaderError(queued, frameBytes, limit int) *transport.Error {
	return errSlowReader.WithDetails("the peer did not read its answers: "+strconv.Itoa(queued)+
		" bytes are queued for it and a frame of "+strconv.Itoa(frameBytes)+" more would pass the limit of "+
		strconv.Itoa(limit)+" bytes (max queued bytes)").
		WithInt("queued_bytes", int64(queued)).
		WithInt("frame_bytes", int64(frameBytes)).
		WithInt("max_queued_bytes", int64(limit))
}

// shutdownError: the server drained; expired says the drain ran out of
// time and cut calls still running.
func shutdownError(drain time.Duration, expired bool) *transport.Error {
	details := "the server is shutting down; every request in flight was answered"
	if expired {
		details = "the server is shutting down; requests still running when the drain timeout passed were answered SERVER_SHUTDOWN"
	}
	e := errShutdown.WithDetails(details + "; reconnect, to another replica if there is one")
	if drain > 0 {
		e = e.WithInt("drain_timeout_ms", drain.Milliseconds())
	}
	return e
}

// shareFullError: the connections of s's owner hold its whole share of
// the gateway-wide budget.
func shareFullError(s *Share) *transport.Error {
	limit := s.b.OwnerLimit()
	return transport.AppError(transport.StringOverloaded,
		"This identity's connections hold their share of the gateway's unsent answers; read them, then retry.").
		WithDetails("the connections of this identity hold "+strconv.FormatInt(s.Used(), 10)+
			" bytes of answers not yet written; one identity may hold "+strconv.FormatInt(limit, 10)+
			" bytes of the gateway's "+strconv.FormatInt(s.b.Limit(), 10)+" (--max-total-queued-bytes × --identity-queued-share)").
		WithRetryHint(RetryBudget).
		WithInt("identity_queued_bytes", s.Used()).
		WithInt("max_identity_queued_bytes", limit)
}

// overloadedConnsError: the server holds its maximum of connections.
func overloadedConnsError(limit int) *transport.Error {
	return errOverloadedConns.WithDetails("the server holds its maximum of "+strconv.Itoa(limit)+" connections").
		WithInt("max_connections", int64(limit))
}

// keepaliveError: the probe id went unanswered for timeout.
func keepaliveError(id string, timeout time.Duration) *transport.Error {
	return errKeepalive.WithDetails("no answer to _Keepalive "+strconv.Quote(id)+" within "+timeout.String()).
		WithInt("keepalive_timeout_ms", timeout.Milliseconds())
}

// initTimeoutError: no successful method within timeout.
func initTimeoutError(method string, timeout time.Duration) *transport.Error {
	return errInitTimeout.WithDetails("no successful "+method+" within "+timeout.String()).
		WithInt("init_timeout_ms", timeout.Milliseconds())
}

// initFailedError is the last failed initialization's error, closing the
// connection after attempts of them: its own details are kept, and the
// count says why this failure, unlike the earlier ones, ends the connection.
func initFailedError(last *transport.Error, method string, attempts int) *transport.Error {
	why := strconv.Itoa(attempts) + " failed " + method + " attempts; the connection is closed"
	details := why
	if last.Details != "" {
		details = last.Details + " (" + why + ")"
	}
	return last.WithDetails(details).WithInt("failed_attempts", int64(attempts))
}
