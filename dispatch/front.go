package dispatch

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// Front is a front door beyond the framed transport (POST /rpc and the
// MCP front door): it invokes methods of the shared table as an identity,
// with the same authorization, rate limits, logging and error mapping,
// counted in metrics under its own "front" label.
type Front struct {
	d    *Dispatcher
	name string
}

// Front returns the entry of the front door named name (the metrics
// label, such as metrics.FrontMCP).
func (d *Dispatcher) Front(name string) *Front { return &Front{d: d, name: name} }

// Name is the front door's metrics label.
func (f *Front) Name() string { return f.name }

// Authenticate checks a bearer token (empty: none) or a verified client
// certificate, as the other front doors do.
func (f *Front) Authenticate(token string, state *tls.ConnectionState) (*auth.Identity, error) {
	id, err := f.d.authn.Authenticate(token, state)
	if err != nil {
		f.d.authFailed(f.name, err)
	}
	return id, err
}

// AuthenticateRequest reads an HTTP request's credentials
// ("Authorization: Bearer <token>" or the verified client certificate),
// counting refusals under this front door's label.
func (f *Front) AuthenticateRequest(r *http.Request) (*auth.Identity, error) {
	id, err := f.Credentials(r)
	if err != nil {
		f.d.authFailed(f.name, err)
	}
	return id, err
}

// Credentials reads an HTTP request's credentials as AuthenticateRequest
// does, without counting a refusal: a front door that passes it on as
// Request.AuthErr has it counted once per call it refuses.
func (f *Front) Credentials(r *http.Request) (*auth.Identity, error) {
	token, err := bearerToken(r)
	if err != nil {
		return nil, err
	}
	return f.d.authn.Authenticate(token, r.TLS)
}

// bearerToken is the token of "Authorization: Bearer <token>"; "" without
// the header.
func bearerToken(r *http.Request) (string, error) {
	v := r.Header.Get("Authorization")
	if v == "" {
		return "", nil
	}
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", auth.ErrBadCredentials
	}
	return strings.TrimSpace(rest), nil
}

// UntilRevoked returns a context that ends, with the revocation as its
// cause, once a reload of the auth file leaves id's credential
// authenticating no one (auth.UntilRevoked with the dispatcher's
// Authenticator): a front door's long-lived stream, such as an MCP
// session, ends then rather than at its next call. stop releases the
// watch; call it when the stream ends.
func (f *Front) UntilRevoked(ctx context.Context, id *auth.Identity) (context.Context, context.CancelFunc) {
	return auth.UntilRevoked(ctx, f.d.authn, id)
}

// Metrics are the gateway's metrics, for a front door's own counters.
func (f *Front) Metrics() *metrics.Metrics { return f.d.opts.Metrics }

// Notifier delivers a notification to the caller of a call while the
// call runs: the run_event notifications of a streamed run (params as in
// docs/live-runs.md). An error ends the stream; the call then fails.
type Notifier func(ctx context.Context, method string, params json.RawMessage) error

// Request is one method call arriving at a front door.
type Request struct {
	Method string
	Params json.RawMessage // a JSON object; empty or null means {}
	// Identity is who makes the call; nil answers AUTH_REQUIRED, with
	// AuthErr as the reason when the credentials were refused.
	Identity *auth.Identity
	AuthErr  error
	Remote   string // the client's address, for the logs
	// ID is the caller's request id as text, echoed as request_id in the
	// run's events; "" when the caller has none.
	ID string
	// Notify receives the call's notifications; nil where the caller
	// cannot receive any: a streamed run is then refused, with NoStream
	// (what the caller would have to do instead) as the reason.
	Notify   Notifier
	NoStream string
}

// Invoke runs method with params (a JSON object) as id, from remote (a
// client address for the logs), for a caller that takes no notifications.
func (f *Front) Invoke(ctx context.Context, id *auth.Identity, remote, method string, params json.RawMessage) (json.RawMessage, *transport.Error) {
	return f.Serve(ctx, &Request{Method: method, Params: params, Identity: id, Remote: remote})
}

// Serve runs one call. The result is the method's JSON object; a failure
// is always a *transport.Error in the Skills Protocol's shapes.
func (f *Front) Serve(ctx context.Context, r *Request) (json.RawMessage, *transport.Error) {
	res, err := f.call(ctx, r)
	if err != nil {
		return nil, ToWire(err)
	}
	obj, err := transport.MarshalObject(res)
	if err != nil {
		f.d.opts.Logger.Error().Err(err).Str("front", f.name).Msg("cannot encode result")
		return nil, transport.ErrInternal
	}
	return obj, nil
}

// call runs r and answers the method's value, for a front door that
// encodes it itself.
func (f *Front) call(ctx context.Context, r *Request) (any, error) {
	params := r.Params
	if len(params) == 0 || string(params) == "null" {
		params = transport.EmptyObject
	}
	authErr := r.AuthErr
	if r.Identity == nil && authErr == nil {
		authErr = auth.ErrNoCredentials
	}
	return f.d.invoke(ctx, &Call{Method: r.Method, Params: params, Front: f.name, Remote: r.Remote,
		log: &f.d.opts.Logger, Identity: r.Identity, authErr: authErr, httpID: r.ID, stream: r.Notify, noStream: r.NoStream})
}
