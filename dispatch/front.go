package dispatch

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/transport"
)

// Front is a front door beyond the framed transport and POST /rpc (the
// MCP front door, for one): it invokes methods of the shared table as an
// identity, with the same authorization, rate limits, logging and error
// mapping, counted in metrics under its own "front" label.
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

// AuthenticateRequest reads an HTTP request's credentials as /rpc does
// ("Authorization: Bearer <token>" or the verified client certificate),
// counting refusals under this front door's label.
func (f *Front) AuthenticateRequest(r *http.Request) (*auth.Identity, error) {
	token, err := bearerToken(r)
	if err != nil {
		f.d.authFailed(f.name, err)
		return nil, err
	}
	return f.Authenticate(token, r.TLS)
}

// Invoke runs method with params (a JSON object) as id, from remote (a
// client address for the logs). A nil id with a non-nil authErr answers
// AUTH_REQUIRED. The result is the method's JSON object; a failure is
// always a *transport.Error in the Skills Protocol's shapes.
func (f *Front) Invoke(ctx context.Context, id *auth.Identity, remote, method string, params json.RawMessage) (json.RawMessage, *transport.Error) {
	if len(params) == 0 || string(params) == "null" {
		params = transport.EmptyObject
	}
	var authErr error
	if id == nil {
		authErr = auth.ErrNoCredentials
	}
	res, err := f.d.invoke(ctx, &Call{Method: method, Params: params, Front: f.name, Remote: remote,
		log: &f.d.opts.Logger, Identity: id, authErr: authErr})
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
