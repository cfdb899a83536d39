package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/skillgate/skillgate/blob"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// MethodFunc implements one method. It returns a value that marshals to a
// JSON object, or an error that ToWire can map.
type MethodFunc func(ctx context.Context, call *Call) (any, error)

// Call is one method invocation, from any front door. A method must not
// keep its Call after it returns: Calls are recycled.
type Call struct {
	Method string          // canonical name
	Params json.RawMessage // a JSON object
	Front  string          // the front door's metrics label (metrics.FrontFramed, FrontHTTP, FrontMCP)
	Conn   *session.Conn   // the framed connection; nil at other front doors
	Remote string          // the client's address at other front doors; framed calls use Conn
	log    *zerolog.Logger
	// Identity is who makes the call, once authorized.
	Identity *auth.Identity
	// authErr is why the credentials of a call from another front door
	// were refused.
	authErr error
	// req is the framed request; httpID the id of a call from another
	// front door.
	req    *session.Request
	httpID string
	// stream delivers the call's notifications at front doors other than
	// the framed transport (server-sent events, MCP notifications); nil
	// where the caller cannot receive them, which noStream explains.
	stream   Notifier
	noStream string
}

// ErrNoStream is Call.Notify's error where the call's front door cannot
// deliver notifications: an HTTP request without Accept:
// text/event-stream, a batch member, a notification.
var ErrNoStream = errors.New("dispatch: this call cannot receive notifications")

// RequestID is the JSON-RPC id of the call ("" for a notification).
func (c *Call) RequestID() string {
	if c.req != nil {
		return c.req.ID()
	}
	return c.httpID
}

// Backlogged reports whether notifications to the caller are waiting for
// it to read (a framed connection's queue past its share).
func (c *Call) Backlogged() bool { return c.Conn != nil && c.Conn.Backlogged() }

// CanNotify reports whether Notify can reach the caller.
func (c *Call) CanNotify() bool { return c.Conn != nil || c.stream != nil }

// Notify sends a notification to the caller while the call runs: on the
// framed transport a JSON-RPC notification, waiting while the
// connection's queue is past its share (session.Conn.Notify); over HTTP
// a server-sent event when the client asked for a stream; elsewhere the
// front door's Notifier. Without any it returns ErrNoStream.
func (c *Call) Notify(ctx context.Context, method string, params any) error {
	switch {
	case c.Conn != nil:
		return c.Conn.Notify(ctx, method, params)
	case c.stream != nil:
		obj, err := transport.MarshalObject(params)
		if err != nil {
			return err
		}
		return c.stream(ctx, method, obj)
	}
	return ErrNoStream
}

// TryNotify is Notify for a sender that would rather compact what it
// sends than wait: on the framed transport it sends nothing and returns an
// error matching session.ErrBackpressure while the connection's queue is
// past the notifications' share; elsewhere it is Notify.
func (c *Call) TryNotify(ctx context.Context, method string, params any) error {
	if c.Conn != nil {
		return c.Conn.TryNotify(method, params)
	}
	return c.Notify(ctx, method, params)
}

// Log starts a log event at level, tagged with who made the call.
func (c *Call) Log(level zerolog.Level) *zerolog.Event {
	e := c.log.WithLevel(level)
	if c.Conn != nil {
		return c.Conn.Tag(e)
	}
	return e.Str("front", c.Front).Str("remote", c.Remote)
}

// Info is what Initialize reports about the server.
type Info struct {
	Name              string
	Version           string
	MaxMessageSize    int
	KeepaliveInterval time.Duration
	KeepaliveTimeout  time.Duration
	// Limits are advertised in Initialize's result; cmd fills them from
	// the configurations that own them.
	Limits Limits
}

// Limits tell a client what it would otherwise learn by failing.
type Limits struct {
	MaxMessageSize      int   `json:"max_message_size"`
	MaxOutputBytes      int   `json:"max_output_bytes"`
	LogsPreviewBytes    int   `json:"logs_preview_bytes"`
	MaxBlobSize         int64 `json:"max_blob_size"`
	DefaultRunTimeoutMS int64 `json:"default_run_timeout_ms"`
	MaxRunTimeoutMS     int64 `json:"max_run_timeout_ms"`
	MaxInflight         int   `json:"max_inflight_requests"`
}

// Options configure a Dispatcher.
type Options struct {
	Info    Info
	Logger  zerolog.Logger
	Metrics *metrics.Metrics
	// Skills serves the discovery methods; nil leaves them out.
	Skills CatalogSource
	// Blobs serves create_blob and read_blob; nil leaves them out.
	Blobs blob.Store
	// Uploads serves begin_upload, upload_chunk and finish_upload; nil
	// keeps them in Blobs with the default limits.
	Uploads *blob.Uploads
	// Authn authenticates clients; nil runs open (everyone anonymous).
	Authn auth.Authenticator
	// Limiter enforces per-identity rates and caps; nil creates one.
	Limiter *auth.Limiter
	// Runner runs execute_skill and run_code; nil answers them with
	// SANDBOX_UNAVAILABLE, explained by RunnerUnavailable. The execution
	// methods need Skills and Blobs too.
	Runner            Runner
	RunnerUnavailable string
	// LookupEnv reads the gateway's environment for skills' declared
	// secrets; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Egress gives runs network access through the filtering proxy; nil:
	// no run has any.
	Egress *Egress
	// Runs records the runs for the run methods; nil keeps them in memory
	// with the default retention.
	Runs *runs.Registry
	// AuthorizationURL, when set, is where AUTH_REQUIRED answers send a
	// client for credentials (authorization_url).
	AuthorizationURL string
	// Status is what gateway_status reports beyond the Dispatcher's own
	// state.
	Status StatusOptions
	// UpgradeURL, when set, is where VERSION_INCOMPATIBLE answers send a
	// client whose protocol version this gateway does not speak
	// (upgrade_url).
	UpgradeURL string
	// Environments keeps the Python environments' directories while runs
	// use them; nil holds none.
	Environments *pyenv.Builder
	// PythonBase is the base environment every run sees after its skills'
	// environments; nil: none.
	PythonBase *pyenv.Base
}

type method struct {
	name         string
	fn           MethodFunc
	framedOnly   bool
	inline       bool       // never blocks: answered on the connection's read loop
	errors       errorTable // its group's; nil for a method registered alone
	framed, http *metrics.MethodMetrics
}

// Dispatcher is the method table shared by the framed transport and the
// HTTP front door. Register every method before serving; lookups are then
// lock-free.
type Dispatcher struct {
	opts     Options
	authn    auth.Authenticator
	limiter  *auth.Limiter
	methods  map[string]*method  // canonical names and aliases
	other    *method             // metrics of unknown methods
	inflight [2]prometheus.Gauge // framed, http
	uploads  *blob.Uploads
	calls    calls     // in flight per front door, for gateway_status
	started  time.Time // when New was called, for gateway_status
	// accessErrors maps the errors of authorization, which any call can
	// meet, after the table of the call's method group.
	accessErrors errorTable
}

// New returns a Dispatcher serving Initialize.
func New(opts Options) *Dispatcher {
	if opts.Metrics == nil {
		opts.Metrics = metrics.New("unknown")
	}
	defaultAccess(&opts)
	presetMetrics(opts.Metrics)
	d := &Dispatcher{opts: opts, authn: opts.Authn, limiter: opts.Limiter, methods: make(map[string]*method),
		accessErrors: accessErrors(), started: time.Now()}
	d.other = d.newMethod("other", nil)
	d.inflight = [2]prometheus.Gauge{
		opts.Metrics.Inflight.WithLabelValues(metrics.FrontFramed),
		opts.Metrics.Inflight.WithLabelValues(metrics.FrontHTTP),
	}
	d.register(MethodInitialize, nil, d.initialize, methodFramedOnly)
	if opts.Skills != nil {
		d.registerGroup(d.discoveryGroup())
	}
	if opts.Blobs != nil {
		d.uploads = opts.Uploads
		if d.uploads == nil {
			d.uploads = blob.NewUploads(opts.Blobs, blob.UploadOptions{})
		}
		d.registerGroup(d.blobGroup())
	}
	if opts.Skills != nil && opts.Blobs != nil {
		if d.opts.Runs == nil {
			// A memory store cannot fail to load.
			d.opts.Runs, _ = runs.Open(context.Background(), runs.Config{Logger: d.opts.Logger})
		}
		d.registerGroup(d.executionGroup())
	}
	d.registerGroup(d.adminGroup())
	if opts.LookupEnv == nil {
		d.opts.LookupEnv = os.LookupEnv
	}
	return d
}

// Register adds a method under its canonical name and aliases. It panics on
// a duplicate name, a programming error. Its errors are mapped by ToWire
// and the access table only; methods that return domain errors belong in
// a method group.
func (d *Dispatcher) Register(name string, aliases []string, fn MethodFunc) {
	d.register(name, aliases, fn, 0)
}

// methodGroup is a set of methods registered together with the error
// table that maps the sentinel errors they return.
type methodGroup struct {
	methods []groupMethod
	errors  errorTable
}

// groupMethod is one method of a group.
type groupMethod struct {
	name    string
	aliases []string
	fn      MethodFunc
	flags   methodFlags
}

// registerGroup registers every method of g with g's error table.
func (d *Dispatcher) registerGroup(g methodGroup) {
	for _, gm := range g.methods {
		d.register(gm.name, gm.aliases, gm.fn, gm.flags).errors = g.errors
	}
}

// methodFlags say how a method is served.
type methodFlags uint8

const (
	methodFramedOnly methodFlags = 1 << iota // not offered over HTTP (Initialize)
	methodInline                             // never blocks: answered on the read loop
)

func (d *Dispatcher) register(name string, aliases []string, fn MethodFunc, flags methodFlags) *method {
	m := d.newMethod(name, fn)
	m.framedOnly, m.inline = flags&methodFramedOnly != 0, flags&methodInline != 0
	for _, n := range append([]string{name}, aliases...) {
		if _, dup := d.methods[n]; dup {
			panic(fmt.Sprintf("dispatch: method %q registered twice", n))
		}
		d.methods[n] = m
	}
	return m
}

func (d *Dispatcher) newMethod(name string, fn MethodFunc) *method {
	return &method{
		name:   name,
		fn:     fn,
		framed: d.opts.Metrics.Method(metrics.FrontFramed, name),
		http:   d.opts.Metrics.Method(metrics.FrontHTTP, name),
	}
}

// GrantableMethods returns the canonical names of every method a
// Dispatcher can serve on any front door except Initialize (where
// authentication happens, so no method policy applies to it): the names an
// auth file may grant (auth.Options.Methods). They are read from the same
// method groups New registers, so a method added to a group is grantable
// without a second list to keep in step.
func GrantableMethods() []string {
	var d Dispatcher // the groups only bind method values; nothing runs
	var names []string
	for _, g := range []methodGroup{d.discoveryGroup(), d.blobGroup(), d.executionGroup(), d.adminGroup()} {
		for _, m := range g.methods {
			if m.flags&methodFramedOnly == 0 {
				names = append(names, m.name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Methods returns the canonical method names.
func (d *Dispatcher) Methods() []string {
	seen := map[string]bool{}
	var names []string
	for _, m := range d.methods {
		if !seen[m.name] {
			seen[m.name] = true
			names = append(names, m.name)
		}
	}
	return names
}

func (d *Dispatcher) lookup(name, front string) *method {
	m := d.methods[name]
	if m == nil || (m.framedOnly && front != metrics.FrontFramed) {
		return nil
	}
	return m
}
