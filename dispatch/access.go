package dispatch

import (
	"errors"
	"time"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/transport"
)

// accessErrors is the table of authentication, authorization and rate
// limits, consulted for every call.
func accessErrors() errorTable {
	return errorTable{
		{auth.ErrNoCredentials, authRequired},
		{auth.ErrBadCredentials, authRequired},
		{auth.ErrPermissionDenied, func(err error) *transport.Error {
			return transport.AppError(StringPermissionDenied, "Permission denied.").WithDetails(err.Error())
		}},
		{auth.ErrRateLimited, RateLimited},
		{auth.ErrTooManyRuns, RateLimited},
		{auth.ErrTooManyConnections, RateLimited},
	}
}

// errNoSession is Initialize's error for a caller without a session (a
// wiring error: lookup serves Initialize to session callers only).
var errNoSession = errors.New("dispatch: Initialize needs a session")

func authRequired(err error) *transport.Error {
	return transport.AppError(StringAuthRequired, "Authentication required.").WithDetails(err.Error())
}

// RequiredAuthType is AUTH_REQUIRED's required_auth_type: a bearer token
// (Initialize's token, or an Authorization header); a verified client
// certificate is the alternative on TLS listeners that ask for one.
const RequiredAuthType = "bearer"

// authDetails adds the error classes' details to an AUTH_REQUIRED answer
// of a call of method: required_auth_type, the scopes a credential must
// grant (the gateway's scopes are its method names; none for Initialize,
// which no method policy covers) and, when the operator set one,
// authorization_url. Other errors pass unchanged.
func (d *Dispatcher) authDetails(wire *transport.Error, method string) *transport.Error {
	if wire == nil || wire.StringCode != StringAuthRequired {
		return wire
	}
	scopes := []string{}
	if d.methods[method] != nil && method != MethodInitialize {
		scopes = append(scopes, method)
	}
	return withData(wire, map[string]any{"required_auth_type": RequiredAuthType, "scopes": scopes},
		"authorization_url", d.opts.AuthorizationURL)
}

// authorize establishes who makes a call and whether it may: the identity
// of a framed connection is revalidated (so that reloads and revocations
// of the auth file apply at the next call), its method is checked, and its
// request rate is charged.
func (d *Dispatcher) authorize(call *Call) error {
	id, err := d.caller(call)
	if err != nil {
		return err
	}
	call.Identity = id
	if err := id.CheckMethod(call.Method); err != nil {
		return err
	}
	if err := d.limiter.AllowRequest(id); err != nil {
		d.opts.Metrics.RateLimited.WithLabelValues(call.Front, string(id.Class())).Inc()
		return err
	}
	return nil
}

// caller is who makes a call: the caller's identity, revalidated on a
// session (so that reloads and revocations of the auth file apply at its
// next call).
func (d *Dispatcher) caller(call *Call) (*auth.Identity, error) {
	id, err := call.caller.Identity()
	sc, ok := call.caller.(SessionCaller)
	if err != nil || !ok {
		return id, err
	}
	fresh, err := d.authn.Revalidate(id)
	if err != nil {
		return nil, err
	}
	if fresh != id {
		sc.Revalidated(id, fresh)
	}
	return fresh, nil
}

// authFailed counts failed authentications and authorizations, wherever in
// a call they happened.
func (d *Dispatcher) authFailed(front string, err error) {
	if r := auth.Reason(err); r != auth.ReasonNone {
		d.opts.Metrics.AuthFailures.WithLabelValues(front, string(r)).Inc()
	}
}

// establish authenticates a session's caller at Initialize, by token or
// by the verified client certificate, and holds one of the identity's
// connection slots until the connection closes.
func (d *Dispatcher) establish(call *Call, token string) (*auth.Identity, error) {
	sc, ok := call.caller.(SessionCaller)
	if !ok {
		return nil, errNoSession
	}
	id, err := d.authn.Authenticate(token, sc.TLS())
	if err != nil {
		return nil, err
	}
	release, err := d.limiter.AcquireConn(id)
	if err != nil {
		d.opts.Metrics.RateLimited.WithLabelValues(call.Front, string(id.Class())).Inc()
		return nil, err
	}
	if err := sc.Establish(id, release); err != nil {
		return nil, err
	}
	return id, nil
}

// defaultAccess fills in an open gateway (everyone anonymous, no limits).
func defaultAccess(opts *Options) {
	if opts.Authn == nil {
		opts.Authn = auth.NewOpen(auth.Limits{})
	}
	if opts.Limiter == nil {
		opts.Limiter = auth.NewLimiter(time.Now)
	}
}
