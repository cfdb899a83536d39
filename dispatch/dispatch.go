package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/skillgate/skillgate/blob"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/runs"
)

// MethodFunc implements one method. It returns a value that marshals to a
// JSON object, or an error that ToWire can map.
type MethodFunc func(ctx context.Context, call *Call) (any, error)

// Call is one method invocation, from any front door. A method must not
// keep its Call after it returns: Calls are recycled.
type Call struct {
	Method string          // canonical name
	Params json.RawMessage // a JSON object
	Front  string          // the front door's name, its metrics label
	// Identity is who makes the call, once authorized.
	Identity *auth.Identity
	caller   Caller
	log      *zerolog.Logger
}

// RequestID is the caller's id of the request ("" for none).
func (c *Call) RequestID() string { return c.caller.RequestID() }

// Backlogged reports whether notifications to the caller are waiting for
// it to read (a framed connection's queue past its share).
func (c *Call) Backlogged() bool {
	b, ok := c.caller.(Backpressured)
	return ok && b.Backlogged()
}

// CanNotify reports whether Notify can reach the caller.
func (c *Call) CanNotify() bool { return c.caller.NoStream() == "" }

// Notify sends a notification to the caller while the call runs, waiting
// while the caller is behind; ErrNoStream where none can reach it.
func (c *Call) Notify(ctx context.Context, method string, params any) error {
	return c.caller.Notify(ctx, method, params)
}

// TryNotify is Notify for a sender that would rather compact what it
// sends than wait: to a caller that can fall behind it sends nothing and
// returns ErrBackpressure while the caller is behind; elsewhere it is
// Notify.
func (c *Call) TryNotify(ctx context.Context, method string, params any) error {
	if b, ok := c.caller.(Backpressured); ok {
		return b.TryNotify(method, params)
	}
	return c.caller.Notify(ctx, method, params)
}

// Log starts a log event at level, tagged with who made the call.
func (c *Call) Log(level zerolog.Level) *zerolog.Event {
	return c.caller.Describe(c.log.WithLevel(level))
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
	index       int // in registration order: a front door's metrics table is indexed by it
	name        string
	fn          MethodFunc
	sessionOnly bool       // served to a SessionCaller only (Initialize)
	inline      bool       // never blocks: answered on the connection's read loop
	errors      errorTable // its group's; nil for a method registered alone
}

// Dispatcher is the method table shared by every front door. Register
// every method before serving; lookups are then lock-free.
type Dispatcher struct {
	opts    Options
	authn   auth.Authenticator
	limiter *auth.Limiter
	methods map[string]*method // canonical names and aliases
	table   []*method          // by index, each once
	other   *method            // metrics of unknown methods
	uploads *blob.Uploads
	fronts  fronts    // the front doors, by name
	started time.Time // when New was called, for gateway_status
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
	d.register(MethodInitialize, nil, d.initialize, methodSessionOnly)
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
	methodSessionOnly methodFlags = 1 << iota // served to a SessionCaller only (Initialize)
	methodInline                              // never blocks: answered on the read loop
)

func (d *Dispatcher) register(name string, aliases []string, fn MethodFunc, flags methodFlags) *method {
	m := d.newMethod(name, fn)
	m.sessionOnly, m.inline = flags&methodSessionOnly != 0, flags&methodInline != 0
	for _, n := range append([]string{name}, aliases...) {
		if _, dup := d.methods[n]; dup {
			panic(fmt.Sprintf("dispatch: method %q registered twice", n))
		}
		d.methods[n] = m
	}
	return m
}

func (d *Dispatcher) newMethod(name string, fn MethodFunc) *method {
	m := &method{index: len(d.table), name: name, fn: fn}
	d.table = append(d.table, m)
	return m
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
			if m.flags&methodSessionOnly == 0 {
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

// lookup finds the method a caller asked for; a method served to session
// callers only is unknown to the others.
func (d *Dispatcher) lookup(name string, caller Caller) *method {
	m := d.methods[name]
	if m == nil {
		return nil
	}
	if _, ok := caller.(SessionCaller); m.sessionOnly && !ok {
		return nil
	}
	return m
}

// Inline reports whether a method is answered without blocking: the
// discovery methods that only read the in-memory catalog, which a
// connection-oriented front door may answer on its read loop.
func (d *Dispatcher) Inline(name []byte) bool {
	m := d.methods[string(name)]
	return m != nil && m.inline
}
