package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/httpfront"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/console"
	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/framedfront"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/skills"
)

func newServeCommand() *cobra.Command {
	cfg := &serveConfig{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway",
		Long: "Run the gateway. Flags may also come from SKILLGATE_<FLAG> environment variables\n" +
			"(e.g. SKILLGATE_KEEPALIVE_INTERVAL=10s) and from --config; the command line wins.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd); err != nil {
				return err
			}
			if err := cfg.validate(); err != nil {
				return err
			}
			log, err := newLogger(cmd.ErrOrStderr(), cfg.LogLevel, cfg.LogFormat)
			if err != nil {
				return err
			}
			return runServe(cmd.Context(), cfg, log)
		},
	}
	registerServeFlags(cmd.Flags(), cfg)
	return cmd
}

// gateway is one gateway process, `serve` or `mcp`: what every front door
// shares, and the front doors its role opens.
type gateway struct {
	cfg      *serveConfig
	role     role
	log      zerolog.Logger
	metrics  *metrics.Metrics
	health   metrics.Health
	skills   *skills.Registry
	blobs    blob.Store
	runs     *runs.Registry
	ctx      context.Context // canceled when the gateway stops
	auth     *auth.Store     // nil without --auth-file, and for mcp
	limiter  *auth.Limiter   // identities' limits, shared by every front door
	runner   *sandbox.Runner // nil when execution is off or unavailable
	python   pythonEnvs
	stop     context.CancelFunc
	dispatch *dispatch.Dispatcher // the one method table every front door calls
	mcp      mcpHolder            // empty with serve --mcp=false

	// The front doors of serve's listeners; nil for mcp.
	framed  *session.Server
	budget  *session.Budget // answer bytes held across the gateway; nil: no limit
	rpc     *http.Server
	front   *httpfront.Server
	ops     *http.Server
	errc    chan error // fatal listener errors
	drained bool       // waitAndShutdown drained the front doors: close need not
}

// role is which front doors a gateway opens; everything behind them is
// built alike (newGateway).
type role int

const (
	// roleServe is `skillgate serve`: the framed (TCP, TLS), HTTP (/rpc,
	// /mcp, /console) and metrics listeners.
	roleServe role = iota
	// roleStdio is `skillgate mcp`: one MCP client on stdin/stdout,
	// trusted as the local user; no listener, and nothing but the client's
	// messages on stdout.
	roleStdio
)

func runServe(ctx context.Context, cfg *serveConfig, log zerolog.Logger) error {
	return runGateway(ctx, cfg, log, roleServe)
}

// runGateway is the life of `serve` and `mcp` alike: build the gateway,
// serve its role's front doors until they end, close it.
func runGateway(ctx context.Context, cfg *serveConfig, log zerolog.Logger, r role) error {
	g, err := newGateway(cfg, log, r)
	if err != nil {
		return err
	}
	defer g.close()
	stopReloads := g.reloadOnHangup()
	defer stopReloads() // before close: a reload in progress ends first
	if r == roleStdio {
		return g.serveStdio(ctx, os.Stdin, os.Stdout)
	}
	return g.serveListeners(ctx)
}

// serveListeners opens serve's listeners and serves until a signal or a
// listener failure, then drains.
func (g *gateway) serveListeners(ctx context.Context) error {
	// Caught before readiness is announced: a SIGTERM that follows "ready"
	// at once drains instead of killing the process where it stands.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	if err := g.listen(); err != nil {
		return err // close closes what listen opened
	}
	g.health.SetReady()
	go releaseIdleMemory(g.ctx, g.log)
	g.log.Info().Str("version", buildVersion()).Msg("skillgate ready")
	return g.waitAndShutdown(ctx, sigs)
}

// newGateway builds the gateway of `skillgate serve` and `skillgate mcp`
// alike: metrics, authentication and the identities' limiter, the Python
// environments, the skill catalog and its reloads, the blob store (local
// or S3) and its uploads, the run records, the sandbox, egress, the one
// dispatcher every front door calls, and the MCP server. The role decides
// only what differs at the front: serve builds the framed and HTTP front
// doors its listeners will serve, with the gateway-wide queued bytes
// budget; mcp's one client is the local user (no --auth-file), and a
// --data-dir another process holds gives way to an instance directory
// (openLocalBlobs). On error, what was opened is closed.
func newGateway(cfg *serveConfig, log zerolog.Logger, r role) (*gateway, error) {
	g := &gateway{cfg: cfg, role: r, log: log, metrics: metrics.New(buildVersion()), errc: make(chan error, 4)}
	g.ctx, g.stop = context.WithCancel(context.Background())
	if err := g.open(); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// open builds, in order, what newGateway lists; the role's front doors
// come last, over the dispatcher.
func (g *gateway) open() error {
	cfg, log := g.cfg, g.log
	authn, err := g.openAuthn()
	if err != nil {
		return err
	}
	g.limiter = auth.NewLimiter(time.Now)
	if g.python, err = openPython(g.ctx, cfg, log, g.metrics); err != nil {
		return err
	}
	if g.skills, err = openSkills(cfg, log, g.metrics, g.python.builder, g.mcp.refresh); err != nil {
		return err
	}
	if g.blobs, err = g.openBlobStore(); err != nil {
		return err
	}
	if g.runs, err = openRuns(cfg, log, g.blobs); err != nil {
		return err
	}
	uploads := blob.NewUploads(g.blobs, blob.UploadOptions{MaxPending: cfg.MaxPendingUploads})
	go sweepUploads(g.ctx, uploads, log.With().Str("component", "blobs").Logger())
	var unavailable string
	g.runner, unavailable = openSandbox(cfg, log, g.metrics)
	sandboxLines := sandboxDetails(g.runner, unavailable)
	reportBase(g.ctx, g.python.base, func(python string) { g.health.SetDetails(sandboxLines + python) })
	warmBase(g.ctx, g.runner, g.python.base, log)
	eg, err := cfg.egress(log.With().Str("component", "egress").Logger(), g.metrics)
	if err != nil {
		return err
	}
	sc := g.sessionConfig()
	g.dispatch = g.newDispatcher(sc, authn, uploads, eg, unavailable)
	if g.role == roleStdio {
		_, err := g.newMCP()
		return err
	}
	return g.openFronts(sc)
}

// openAuthn authenticates serve's clients with --auth-file, or lets them
// in open where openAuth allows it; mcp's one client is the local user,
// to whom every method and namespace is open.
func (g *gateway) openAuthn() (auth.Authenticator, error) {
	if g.role == roleStdio {
		return auth.NewOpen(auth.Limits{}), nil
	}
	authn, store, err := openAuth(g.ctx, g.cfg, g.log)
	g.auth = store
	return authn, err
}

// openBlobStore opens the blob store. A serve replica refuses a --data-dir
// another process holds; mcp, of which desktop hosts start several, takes
// an instance directory under it.
func (g *gateway) openBlobStore() (blob.Store, error) {
	if g.role == roleStdio {
		return openLocalBlobs(g.ctx, g.cfg, g.log, g.metrics)
	}
	return openBlobs(g.ctx, g.cfg, g.log, g.metrics)
}

// sessionConfig is the framed transport's configuration, whose message
// size and keepalive Initialize reports. mcp has neither a framed front
// door nor its flags: it has the defaults.
func (g *gateway) sessionConfig() session.Config {
	if g.role == roleStdio {
		return session.DefaultConfig()
	}
	return g.cfg.session()
}

// newDispatcher builds the method table of every front door.
func (g *gateway) newDispatcher(sc session.Config, authn auth.Authenticator, uploads *blob.Uploads, eg *dispatch.Egress, unavailable string) *dispatch.Dispatcher {
	cfg := g.cfg
	return dispatch.New(dispatch.Options{
		Info: dispatch.Info{
			Name: "skillgate", Version: buildVersion(), MaxMessageSize: sc.MaxMessageSize,
			KeepaliveInterval: sc.KeepaliveInterval, KeepaliveTimeout: sc.KeepaliveTimeout,
			Limits: cfg.limits(sc),
		},
		Logger:  g.log.With().Str("component", "dispatch").Logger(),
		Metrics: g.metrics,
		Skills:  g.skills,
		Blobs:   g.blobs,
		Uploads: uploads,
		Authn:   authn,
		Limiter: g.limiter,
		Runner:  runnerOrNil(g.runner),
		Egress:  eg,
		Runs:    g.runs,

		Environments: g.python.builder,
		PythonBase:   g.python.base,

		RunnerUnavailable: unavailable,
		Status:            dispatch.StatusOptions{Connections: g.openConnections, SandboxWorkers: cfg.SandboxWorkers, BlobQuotaBytes: cfg.MaxBlobStoreBytes},
		AuthorizationURL:  cfg.AuthorizationURL,
		UpgradeURL:        cfg.UpgradeURL,
	})
}

// openFronts builds the front doors of serve's listeners over the
// dispatcher: framed (TCP and TLS), and HTTP with /rpc, /mcp and /console;
// listen opens the listeners.
func (g *gateway) openFronts(sc session.Config) error {
	cfg, log := g.cfg, g.log
	g.budget = session.NewFairBudget(cfg.totalQueued(memoryLimit()), cfg.IdentityShare)
	g.metrics.QueuedBytes(
		func() float64 { return float64(g.budget.Used()) },
		func() float64 { return float64(g.budget.Limit()) })
	log.Info().Int64("max_total_queued_bytes", g.budget.Limit()).Int64("max_identity_queued_bytes", g.budget.OwnerLimit()).
		Msg("gateway-wide queued bytes budget")
	if err := g.openFramed(sc); err != nil {
		return err
	}
	g.front = httpfront.New(g.dispatch.Front(metrics.FrontHTTP), httpfront.Options{
		MaxBodyBytes:     int64(sc.MaxMessageSize),
		MaxResponseBytes: sc.MaxMessageSize,
		BodyTimeout:      sc.FrameTimeout,
		WriteTimeout:     sc.WriteTimeout,
		Budget:           g.budget,
		AllowedOrigins:   cfg.HTTPOrigins,
		AllowedHosts:     cfg.HTTPHosts,
	})
	if cfg.MCP {
		if err := g.openMCP(sc.MaxMessageSize); err != nil {
			return err
		}
	}
	if cfg.Console {
		g.front.Handle(console.Prefix, console.Handler())
		g.front.Handle("/console", console.Handler())
	}
	g.rpc = &http.Server{
		Handler:           httpfront.WithAccessLog(g.front, log.With().Str("component", "dispatch").Logger()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          httpErrorLog(log),
	}
	return nil
}

// openFramed builds the framed front door (--listen, --tls-listen) over
// the dispatcher.
func (g *gateway) openFramed(sc session.Config) error {
	sc.Logger = g.log.With().Str("component", "session").Logger()
	sc.Metrics = g.metrics
	sc.Budget = g.budget
	srv, err := session.NewServer(sc, framedfront.New(g.dispatch))
	if err != nil {
		return err
	}
	g.framed = srv
	return nil
}

// listen opens every configured listener; any failure aborts the start.
func (g *gateway) listen() error {
	if a := g.cfg.Listen; a != "" {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		g.serveFramed(ln, "tcp")
	}
	if a := g.cfg.TLSListen; a != "" {
		tc, err := g.tlsConfig()
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("--tls-listen: %w", err)
		}
		g.serveFramed(tls.NewListener(ln, tc), "tls")
	}
	if a := g.cfg.HTTPListen; a != "" {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("--http-listen: %w", err)
		}
		ln = httpfront.LimitListener(ln, g.cfg.MaxHTTPConns, g.metrics)
		if g.cfg.HTTPTLSCert != "" {
			tc, err := loadTLS(g.cfg.HTTPTLSCert, g.cfg.HTTPTLSKey, g.cfg.HTTPTLSClientCA, "--http-tls")
			if err != nil {
				_ = ln.Close()
				return err
			}
			ln = tls.NewListener(ln, tc)
		}
		g.serveHTTP(g.rpc, ln, "http")
	}
	if a := g.cfg.MetricsListen; a != "" {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		g.ops = &http.Server{
			Handler:           g.metrics.Handler(&g.health, metrics.HandlerOptions{Pprof: g.cfg.Pprof}),
			ReadHeaderTimeout: 10 * time.Second,
		}
		g.serveHTTP(g.ops, ln, "metrics")
	}
	return nil
}

func (g *gateway) serveFramed(ln net.Listener, name string) {
	g.log.Info().Str("listener", name).Str("addr", ln.Addr().String()).Msg("listening")
	g.framed.PresetMetrics(name)
	go func() {
		if err := g.framed.Serve(ln, name); err != nil && !errors.Is(err, session.ErrServerClosed) {
			g.errc <- fmt.Errorf("%s listener: %w", name, err)
		}
	}()
}

func (g *gateway) serveHTTP(srv *http.Server, ln net.Listener, name string) {
	g.log.Info().Str("listener", name).Str("addr", ln.Addr().String()).Msg("listening")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.errc <- fmt.Errorf("%s listener: %w", name, err)
		}
	}()
}

// tlsConfig loads the server certificate and, for mutual TLS, the client CA.
func (g *gateway) tlsConfig() (*tls.Config, error) {
	return loadTLS(g.cfg.TLSCert, g.cfg.TLSKey, g.cfg.TLSClientCA, "--tls")
}

// loadTLS loads a certificate and key and, for mutual TLS, a client CA;
// flag prefixes the flag names in errors.
func loadTLS(certFile, keyFile, clientCA, flag string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s-cert/%s-key: %w", flag, flag, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("%s-client-ca: %w", flag, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s-client-ca: no PEM certificates in %s", flag, clientCA)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// runnerOrNil keeps a nil *sandbox.Runner from becoming a non-nil
// dispatch.Runner.
func runnerOrNil(r *sandbox.Runner) dispatch.Runner {
	if r == nil {
		return nil
	}
	return r
}

// close releases what newGateway opened, for serve and mcp alike: the
// front doors a failed start left open, then the sandbox, the run records
// (once the runs it ended are saved), the skills, the Python environments
// and the blob store.
func (g *gateway) close() {
	if !g.drained {
		g.closeFronts()
	}
	g.stop()
	if g.runner != nil {
		_ = g.runner.Close()
	}
	if g.runs != nil {
		// Closing the runner ends the runs in progress; their records
		// (interrupted) must be saved before the blob store goes.
		ctx, cancel := context.WithTimeout(context.Background(), runsSaveGrace)
		_ = g.runs.WaitIdle(ctx)
		cancel()
		g.runs.Close()
	}
	if g.skills != nil {
		_ = g.skills.Close()
	}
	g.python.close()
	if g.blobs != nil {
		_ = g.blobs.Close()
	}
}

// closeFronts closes serve's front doors at once, without the drain of
// waitAndShutdown: a start that failed part way may have left some open.
func (g *gateway) closeFronts() {
	if g.framed != nil {
		_ = g.framed.Close()
	}
	for _, s := range []*http.Server{g.rpc, g.ops} {
		if s != nil {
			_ = s.Close()
		}
	}
}

// reloadOnHangup reloads on each SIGHUP, for serve and mcp alike, until
// the returned stop is called; stop waits for a reload in progress.
func (g *gateway) reloadOnHangup() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-hup:
				g.reload()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-exited
	}
}

// reload reloads the skills, keeping the previous catalog on failure, and
// the auth file when there is one.
func (g *gateway) reload() {
	if g.auth == nil {
		g.log.Info().Msg("SIGHUP: reloading skills")
		reloadSkills(g.skills, g.log, g.metrics)
		return
	}
	g.log.Info().Msg("SIGHUP: reloading skills and the auth file")
	reloadSkills(g.skills, g.log, g.metrics)
	if err := g.auth.Reload(); err != nil {
		g.log.Error().Err(err).Msg("auth file reload failed; identities it changed or removed are disabled until a valid version loads")
	}
}

// runsSaveGrace bounds the wait, at exit, for the runs the closing
// sandbox ended to save their records.
const runsSaveGrace = 10 * time.Second

// httpAnswerGrace is how long HTTP requests cut by the drain deadline get
// to write their SERVER_SHUTDOWN answers before their connections close.
const httpAnswerGrace = 5 * time.Second

// waitAndShutdown runs until SIGTERM/SIGINT on sigs (or a listener failure), then
// drains (SIGHUP reloads meanwhile: reloadOnHangup): readiness goes false, new connections are refused, in-flight
// requests get --drain-timeout to finish, every connection is told
// SERVER_SHUTDOWN. A second signal cuts the drain short.
func (g *gateway) waitAndShutdown(ctx context.Context, sigs <-chan os.Signal) error {
	var fatal error
	select {
	case s := <-sigs:
		g.log.Info().Str("signal", s.String()).Dur("drain_timeout", g.cfg.DrainTimeout).Msg("draining")
	case fatal = <-g.errc:
		g.log.Error().Err(fatal).Msg("listener failed; shutting down")
	case <-ctx.Done():
	}
	g.health.SetNotReady("draining")
	cutShort := fatal == nil && !g.delayDrain(sigs)
	drainCtx, cancel := context.WithTimeout(context.Background(), g.cfg.DrainTimeout)
	defer cancel()
	if cutShort {
		cancel()
	}
	go func() {
		select {
		case <-sigs:
			g.log.Warn().Msg("second signal: closing at once")
			cancel()
		case <-drainCtx.Done():
		}
	}()
	httpDone := make(chan struct{})
	go func() {
		defer close(httpDone)
		if !httpfront.Shutdown(drainCtx, g.rpc, g.front, httpAnswerGrace) {
			g.log.Warn().Msg("drain timeout reached; HTTP requests in flight answered SERVER_SHUTDOWN")
		}
	}()
	if err := g.framed.Shutdown(drainCtx); err != nil {
		g.log.Warn().Err(err).Msg("drain timeout reached; remaining requests canceled")
	}
	<-httpDone
	if g.runs.WaitIdle(drainCtx) != nil {
		g.log.Warn().Msg("drain timeout reached; runs still in progress are recorded interrupted")
	}
	if g.ops != nil {
		_ = g.ops.Close()
	}
	g.drained = true
	g.log.Info().Msg("stopped")
	return fatal
}

// delayDrain keeps serving for --drain-delay after readiness went false,
// so that load balancers polling /readyz stop sending new connections
// before the gateway stops accepting them. A second signal ends it and
// reports false.
func (g *gateway) delayDrain(sigs <-chan os.Signal) bool {
	if g.cfg.DrainDelay <= 0 {
		return true
	}
	g.log.Info().Dur("drain_delay", g.cfg.DrainDelay).Msg("not ready; serving on while load balancers stop routing here")
	t := time.NewTimer(g.cfg.DrainDelay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-sigs:
		g.log.Warn().Msg("second signal: closing at once")
		return false
	}
}

// openConnections is gateway_status's count of what is open at each front
// door: framed connections (TCP and TLS) and MCP sessions.
func (g *gateway) openConnections(m map[string]int) {
	if g.framed != nil {
		m[metrics.FrontFramed] = g.framed.Connections()
	}
	if s := g.mcp.p.Load(); s != nil {
		m[metrics.FrontMCP] = s.OpenSessions()
	}
}
