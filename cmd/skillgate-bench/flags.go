package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// targetFlags are the connection flags every command shares.
type targetFlags struct {
	addr     string
	tls      bool
	insecure bool
	caFile   string
	srcIPs   int
	timeout  time.Duration
}

func (f *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "127.0.0.1:7400", "server address")
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS")
	fs.BoolVar(&f.insecure, "tls-insecure", false, "with --tls: do not verify the server certificate")
	fs.StringVar(&f.caFile, "tls-ca", "", "with --tls: PEM CA bundle that verifies the server")
	fs.IntVar(&f.srcIPs, "src-ips", 0, "spread connections over source addresses 127.0.0.1..127.0.0.N (each has its own ephemeral ports)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "dial, handshake and Initialize timeout")
}

func (f *targetFlags) target(pool *x509.CertPool) (target, error) {
	t := target{Addr: f.addr, Timeout: f.timeout, SrcIPs: f.srcIPs}
	if !f.tls {
		return t, nil
	}
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return t, fmt.Errorf("%w: --addr %q: %v", errUsage, f.addr, err)
	}
	t.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.insecure, RootCAs: pool, ServerName: host}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return t, err
		}
		t.TLS.RootCAs = x509.NewCertPool()
		if !t.TLS.RootCAs.AppendCertsFromPEM(pem) {
			return t, fmt.Errorf("%w: no certificate in %s", errUsage, f.caFile)
		}
	}
	return t, nil
}

// args returns the flags that reproduce f, for worker processes.
func (f *targetFlags) args() []string {
	return []string{"--addr", f.addr, "--tls=" + strconv.FormatBool(f.tls), "--tls-insecure=" + strconv.FormatBool(f.insecure),
		"--tls-ca", f.caFile, "--src-ips", strconv.Itoa(f.srcIPs), "--timeout", f.timeout.String()}
}

// startFlags let load and idle start the server themselves.
type startFlags struct {
	kind      string
	root, bin string
	serverTLS bool
	kaEvery   time.Duration
}

func (f *startFlags) register(fs *flag.FlagSet, kaDefault time.Duration) {
	fs.StringVar(&f.kind, "start", "", "build and start this server instead of using --addr: gateway, ceiling, jrpc2 or sourcegraph")
	fs.StringVar(&f.root, "root", ".", "with --start: the repository root (holds go.mod and bench/)")
	fs.StringVar(&f.bin, "bin-dir", "bin/bench", "with --start: where to build the binaries")
	fs.BoolVar(&f.serverTLS, "server-tls", false, "with --start gateway: serve TLS with a fresh self-signed certificate (implies --tls)")
	fs.DurationVar(&f.kaEvery, "keepalive-interval", kaDefault, "with --start gateway: the gateway's --keepalive-interval")
}

// start builds and starts the server when asked to, pointing tf at it.
// The returned stop function is never nil.
func (f *startFlags) start(ctx context.Context, tf *targetFlags, log zerolog.Logger) (*server, *x509.CertPool, func(), error) {
	if f.kind == "" {
		return nil, nil, func() {}, nil
	}
	bins, err := buildBinaries(ctx, f.root, f.bin, log)
	if err != nil {
		return nil, nil, nil, err
	}
	o := serverOpts{KeepaliveInterval: f.kaEvery, Pprof: true, MaxInflight: 4096}
	var pool *x509.CertPool
	cleanup := func() {}
	if f.serverTLS {
		dir, err := os.MkdirTemp("", "skillgate-bench-tls-")
		if err != nil {
			return nil, nil, nil, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
		if o.CertFile, o.KeyFile, pool, err = selfSigned(dir); err != nil {
			cleanup()
			return nil, nil, nil, err
		}
		o.TLS, tf.tls = true, true
	}
	srv, err := startServer(ctx, f.kind, bins, o, log)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	srv.CAFile = o.CertFile
	tf.addr = srv.Addr
	return srv, pool, func() { srv.stop(); cleanup() }, nil
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	return nil
}

// loadFlags are the flags of the load command.
type loadFlags struct {
	tf           targetFlags
	sf           startFlags
	cfg          loadConfig
	params, size string
}

func (f *loadFlags) register(fs *flag.FlagSet) {
	f.tf.register(fs)
	f.sf.register(fs, 0)
	fs.IntVar(&f.cfg.Conns, "conns", 1, "connections")
	fs.IntVar(&f.cfg.Depth, "depth", 32, "requests in flight per connection")
	fs.DurationVar(&f.cfg.Duration, "duration", 5*time.Second, "measured window")
	fs.DurationVar(&f.cfg.Warmup, "warmup", time.Second, "unmeasured load before the window")
	fs.IntVar(&f.cfg.Requests, "requests", 0, "send this many requests in all and measure them all (instead of --duration)")
	fs.StringVar(&f.cfg.Method, "method", "_Keepalive", "method to call (e.g. _Keepalive, Echo, list_skills)")
	fs.StringVar(&f.params, "params", "{}", "params object (list_skills: try {\"limit\":1})")
	fs.StringVar(&f.size, "size", "0", "pad requests to about this many bytes (100, 4k, 64k; 0: no padding)")
	fs.BoolVar(&f.cfg.NoInit, "no-init", false, "do not send Initialize first")
	fs.IntVar(&f.cfg.DialConcurrency, "dial-concurrency", 64, "connections set up at once")
}

func cmdLoad(ctx context.Context, args []string, stdout io.Writer, log zerolog.Logger) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var f loadFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	size, err := parseSize(f.size)
	if err != nil {
		return err
	}
	cfg := f.cfg
	cfg.Size, cfg.Params = size, []byte(f.params)
	srv, pool, stop, err := f.sf.start(ctx, &f.tf, log)
	if err != nil {
		return err
	}
	defer stop()
	if cfg.Target, err = f.tf.target(pool); err != nil {
		return err
	}
	res, err := runLoad(ctx, cfg, log)
	if res != nil {
		name := f.tf.addr
		if srv != nil {
			name = srv.Kind
		}
		writeLoadTable(stdout, name, &cfg, res)
	}
	return err
}

// idleFlags are the flags of the idle command.
type idleFlags struct {
	tf  targetFlags
	sf  startFlags
	cfg idleConfig
}

func (f *idleFlags) register(fs *flag.FlagSet) {
	f.tf.register(fs)
	f.sf.register(fs, time.Second)
	fs.IntVar(&f.cfg.Conns, "conns", 1000, "idle connections to hold")
	fs.IntVar(&f.cfg.Rounds, "rounds", 3, "server keepalive rounds to hold them through (0: just --hold)")
	fs.DurationVar(&f.cfg.Hold, "hold", 2*time.Second, "minimum hold time once connected")
	fs.DurationVar(&f.cfg.HoldMax, "hold-max", 90*time.Second, "stop waiting for the keepalive rounds after this")
	fs.IntVar(&f.cfg.ServerPID, "server-pid", 0, "pid of the server whose memory is measured (not with --start)")
	fs.StringVar(&f.cfg.MetricsURL, "metrics-url", "", "the server's Prometheus endpoint, for Go heap and stack figures")
	fs.IntVar(&f.cfg.PerProcess, "per-process", 0, "connections per worker process (0: from the open-file limit)")
	fs.IntVar(&f.cfg.DialConcurrency, "dial-concurrency", 64, "connections set up at once")
	fs.BoolVar(&f.cfg.NoInit, "no-init", false, "do not send Initialize")
}

func cmdIdle(ctx context.Context, args []string, stdout io.Writer, log zerolog.Logger) error {
	fs := flag.NewFlagSet("idle", flag.ContinueOnError)
	var f idleFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	srv, pool, stop, err := f.sf.start(ctx, &f.tf, log)
	if err != nil {
		return err
	}
	defer stop()
	cfg, name := f.cfg, f.tf.addr
	if srv != nil {
		cfg.ServerPID, cfg.MetricsURL, name = srv.PID(), srv.MetricsURL(), srv.Kind
		f.tf.caFile = srv.CAFile // the workers verify the fresh certificate too
	}
	if cfg.Target, err = f.tf.target(pool); err != nil {
		return err
	}
	cfg.WorkerArgs = f.tf.args()
	res, err := runIdle(ctx, cfg, log)
	if res != nil {
		writeIdleTable(stdout, []idleRow{{Server: name, TLS: f.tf.tls, Res: res}})
	}
	return err
}

func cmdIdleHold(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("idle-hold", flag.ContinueOnError)
	var (
		tf                     targetFlags
		conns, offset, dialCon int
		noInit                 bool
	)
	tf.register(fs)
	fs.IntVar(&conns, "conns", 0, "connections to hold")
	fs.IntVar(&offset, "offset", 0, "number of the first connection (spreads source addresses)")
	fs.IntVar(&dialCon, "dial-concurrency", 64, "connections set up at once")
	fs.BoolVar(&noInit, "no-init", false, "do not send Initialize")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	t, err := tf.target(nil)
	if err != nil {
		return err
	}
	return runWorker(ctx, t, conns, offset, dialCon, noInit, stdin, stdout)
}
