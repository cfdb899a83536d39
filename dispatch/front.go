package dispatch

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// Front is one front door's entry to the shared method table: the
// framed transport (framedfront), POST /rpc (httpfront) and MCP
// (mcpfront) each invoke methods through their own, with the same
// authorization, rate limits, logging and error mapping, counted in
// metrics under the front's name as the "front" label. The Front of a
// name is created once (Dispatcher.Front), with its metrics at hand.
type Front struct {
	d        *Dispatcher
	name     string
	methods  []*metrics.MethodMetrics // by method index
	inflight prometheus.Gauge
	active   atomic.Int64 // calls in flight, for gateway_status
}

// fronts holds a Dispatcher's front doors by name.
type fronts struct {
	mu sync.Mutex
	m  map[string]*Front
}

// Front returns the entry of the front door named name (its metrics
// label, such as metrics.FrontMCP); every call with one name returns the
// same Front.
func (d *Dispatcher) Front(name string) *Front {
	d.fronts.mu.Lock()
	defer d.fronts.mu.Unlock()
	if f := d.fronts.m[name]; f != nil {
		return f
	}
	f := &Front{d: d, name: name, inflight: d.opts.Metrics.Inflight.WithLabelValues(name)}
	for _, m := range d.table {
		f.methods = append(f.methods, d.opts.Metrics.Method(name, m.name))
	}
	if d.fronts.m == nil {
		d.fronts.m = make(map[string]*Front)
	}
	d.fronts.m[name] = f
	return f
}

// each calls fn for every front door created so far.
func (fs *fronts) each(fn func(*Front)) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.m {
		fn(f)
	}
}

// metricsOf returns a method's metrics at this front door.
func (f *Front) metricsOf(m *method) *metrics.MethodMetrics {
	if m.index < len(f.methods) {
		return f.methods[m.index]
	}
	return f.d.opts.Metrics.Method(f.name, m.name) // registered after the Front was made
}

// Name is the front door's metrics label.
func (f *Front) Name() string { return f.name }

// Dispatcher is the method table this front door serves.
func (f *Front) Dispatcher() *Dispatcher { return f.d }

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
// call runs: the run_event notifications of a streamed run, as *RunEvent
// values the front door encodes for its wire (or, for MCP, turns into its
// own notifications). An error ends the stream; the call then fails.
type Notifier func(ctx context.Context, method string, params any) error

// Request is one method call arriving at a front door that knows the
// caller per request (POST /rpc, MCP).
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

// Serve runs one call and encodes its result. The result is the method's
// JSON object; a failure is always a *transport.Error in the Skills
// Protocol's shapes.
func (f *Front) Serve(ctx context.Context, r *Request) (json.RawMessage, *transport.Error) {
	res, e := f.Call(ctx, r)
	if e != nil {
		return nil, e
	}
	obj, err := transport.MarshalObject(res)
	if err != nil {
		f.d.opts.Logger.Error().Err(err).Str("front", f.name).Msg("cannot encode result")
		return nil, transport.ErrInternal
	}
	return obj, nil
}

// Call runs one call and answers the method's Go value (such as a
// *RunResult), for a front door that encodes it itself, once, at its
// wire. A failure is always a *transport.Error.
func (f *Front) Call(ctx context.Context, r *Request) (any, *transport.Error) {
	params := r.Params
	if len(params) == 0 || string(params) == "null" {
		params = transport.EmptyObject
	}
	res, err := f.Dispatch(ctx, r.Method, params, &requestCaller{r: *r, front: f.name})
	if err != nil {
		return nil, ToWire(err)
	}
	return res, nil
}
