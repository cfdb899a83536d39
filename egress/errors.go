package egress

import "errors"

// Sentinel errors.
var (
	// errInvalidConfig: a Config field is out of range.
	errInvalidConfig = errors.New("egress: invalid config")
	// errByteCap: the run has sent all the bytes its cap allows.
	errByteCap = errors.New("egress: the run's byte cap is reached")
	// errHeaderTooLarge: a request's line and headers pass
	// MaxHeaderBytes.
	errHeaderTooLarge = errors.New("egress: request header too large")
)

// Reason says why a connection was refused; its String is the metrics
// label and the name the 403 body and the logs give.
type Reason int

// Reasons. ReasonNone is an allowed connection.
const (
	ReasonNone       Reason = iota
	ReasonNotAllowed        // no allow rule of every layer matches
	ReasonDenied            // an operator deny rule matches
	ReasonLoopback
	ReasonPrivate
	ReasonLinkLocal
	ReasonMulticast
	ReasonMetadata
	ReasonReserved
	ReasonResolve // the name does not resolve
	ReasonLimit   // the run's connection limit
	ReasonDial    // the upstream refused or timed out
	ReasonBadRequest
	ReasonHeaderTooLarge // the request line and headers pass MaxHeaderBytes
	ReasonHost           // an address of the gateway's own host
)

var reasonNames = [...]string{
	ReasonNone: "allowed", ReasonNotAllowed: "not_allowed", ReasonDenied: "denied",
	ReasonLoopback: "loopback", ReasonPrivate: "private", ReasonLinkLocal: "link_local",
	ReasonMulticast: "multicast", ReasonMetadata: "metadata", ReasonReserved: "reserved",
	ReasonResolve: "resolve_failed", ReasonLimit: "connection_limit", ReasonDial: "connect_failed",
	ReasonBadRequest: "bad_request", ReasonHeaderTooLarge: "header_too_large", ReasonHost: "host",
}

func (r Reason) String() string {
	if r < 0 || int(r) >= len(reasonNames) {
		return "unknown"
	}
	return reasonNames[r]
}
