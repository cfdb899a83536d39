package auth

import (
	"errors"
	"time"
)

// Sentinel errors. Match them with errors.Is; the text of every error this
// package returns from an authentication or authorization check is safe to
// send to the client: it never contains a presented token, a stored hash, or
// whether a token is known.
var (
	// ErrNoCredentials: the client presented neither a token nor a client
	// certificate. Maps to AUTH_REQUIRED.
	ErrNoCredentials = errors.New("authentication required: present a bearer token or a client certificate")
	// ErrBadCredentials: the credentials were presented but are not valid
	// here (unknown, revoked or unverified). Maps to AUTH_REQUIRED.
	ErrBadCredentials = errors.New("authentication failed: the presented credentials are not accepted by this gateway")
	// ErrPermissionDenied: the identity is known but may not do this. Maps
	// to PERMISSION_DENIED.
	ErrPermissionDenied = errors.New("permission denied")

	// ErrRateLimited: the identity's request rate is exhausted. Maps to
	// RATE_LIMITED, with LimitError.RetryAfter as the suggested delay.
	ErrRateLimited = errors.New("rate limit exceeded")
	// ErrTooManyRuns: the identity has its maximum of runs in flight.
	ErrTooManyRuns = errors.New("too many concurrent runs")
	// ErrTooManyConnections: the identity has its maximum of connections.
	ErrTooManyConnections = errors.New("too many connections")

	// ErrAnonymousNotAllowed: no auth file, a non-loopback listener and no
	// explicit permission to run open.
	ErrAnonymousNotAllowed = errors.New("refusing to run without authentication on a non-loopback address")
	// ErrInvalidFile: the auth file has problems; the error is a
	// *FileError listing them all.
	ErrInvalidFile = errors.New("invalid auth file")
)

// FailureReason says why an authentication or authorization check failed.
// The set is fixed, so it can be a metric label.
type FailureReason string

// Failure reasons.
const (
	ReasonNone            FailureReason = ""
	ReasonMissing         FailureReason = "missing"          // no token and no client certificate
	ReasonInvalid         FailureReason = "invalid"          // token not in the file
	ReasonRevoked         FailureReason = "revoked"          // token was in an earlier version of the file
	ReasonCertUnverified  FailureReason = "cert_unverified"  // a client certificate without a verified chain
	ReasonCertUnknown     FailureReason = "cert_unknown"     // verified certificate matching no identity
	ReasonCertAmbiguous   FailureReason = "cert_ambiguous"   // verified certificate matching several identities
	ReasonMethodDenied    FailureReason = "method_denied"    // method not in the identity's methods
	ReasonNamespaceDenied FailureReason = "namespace_denied" // skill outside the identity's namespaces
)

// Reasons lists every failure reason except ReasonNone, for pre-registering
// metric label values.
func Reasons() []FailureReason {
	return []FailureReason{
		ReasonMissing, ReasonInvalid, ReasonRevoked, ReasonCertUnverified,
		ReasonCertUnknown, ReasonCertAmbiguous, ReasonMethodDenied, ReasonNamespaceDenied,
	}
}

// Failure is an authentication or authorization failure. It wraps one of
// ErrNoCredentials, ErrBadCredentials or ErrPermissionDenied; its Error text
// is safe to send to the client. Failures are immutable and may be shared.
type Failure struct {
	reason FailureReason
	err    error
	detail string
}

func (f *Failure) Error() string {
	if f.detail == "" {
		return f.err.Error()
	}
	return f.err.Error() + ": " + f.detail
}

// Unwrap returns the sentinel error.
func (f *Failure) Unwrap() error { return f.err }

// Reason returns the failure's reason, for metrics and logs.
func (f *Failure) Reason() FailureReason { return f.reason }

// Reason returns the FailureReason of an error returned by this package, or
// ReasonNone if err is no *Failure.
func Reason(err error) FailureReason {
	var f *Failure
	if errors.As(err, &f) {
		return f.reason
	}
	return ReasonNone
}

// Shared failures: a client hammering bad tokens costs no allocation. The
// messages of all bad-credential reasons are identical on purpose.
var (
	failMissing        = &Failure{reason: ReasonMissing, err: ErrNoCredentials}
	failInvalid        = &Failure{reason: ReasonInvalid, err: ErrBadCredentials}
	failRevoked        = &Failure{reason: ReasonRevoked, err: ErrBadCredentials}
	failCertUnverified = &Failure{reason: ReasonCertUnverified, err: ErrBadCredentials}
	failCertUnknown    = &Failure{reason: ReasonCertUnknown, err: ErrBadCredentials}
	failCertAmbiguous  = &Failure{reason: ReasonCertAmbiguous, err: ErrBadCredentials}
)

// LimitError is a refusal by the Limiter. It wraps ErrRateLimited,
// ErrTooManyRuns or ErrTooManyConnections.
type LimitError struct {
	Err        error
	RetryAfter time.Duration // when a retry may succeed; never negative
}

func (e *LimitError) Error() string { return e.Err.Error() }

// Unwrap returns the sentinel error.
func (e *LimitError) Unwrap() error { return e.Err }

// RetryAfterMillis returns RetryAfter in whole milliseconds, rounded up, for
// retry.suggested_delay_ms: a client waiting that long will not be refused
// again for the same reason merely by rounding.
func (e *LimitError) RetryAfterMillis() int64 {
	return int64((e.RetryAfter + time.Millisecond - 1) / time.Millisecond)
}
