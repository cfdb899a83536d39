package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Server kinds of the comparison.
const (
	kindGateway     = "gateway"
	kindCeiling     = "ceiling"
	kindJRPC2       = "jrpc2"
	kindSourcegraph = "sourcegraph"
)

var serverKinds = []string{kindGateway, kindCeiling, kindJRPC2, kindSourcegraph}

// binaries are the built server executables.
type binaries struct {
	Gateway, Ceiling, JRPC2, Sourcegraph string
}

func (b binaries) of(kind string) string {
	return map[string]string{kindGateway: b.Gateway, kindCeiling: b.Ceiling, kindJRPC2: b.JRPC2, kindSourcegraph: b.Sourcegraph}[kind]
}

// buildBinaries builds the gateway (from the main module at root) and the
// comparison servers (from the separate module at root/bench) into dir.
func buildBinaries(ctx context.Context, root, dir string, log zerolog.Logger) (binaries, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return binaries{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return binaries{}, err
	}
	log.Info().Str("dir", dir).Msg("building the gateway and the comparison servers")
	if err := goBuild(ctx, root, "-o", filepath.Join(dir, "skillgate"), "./cmd/skillgate"); err != nil {
		return binaries{}, err
	}
	if err := goBuild(ctx, filepath.Join(root, "bench"), "-o", dir+"/", "./cmd/ceiling", "./cmd/jrpc2srv", "./cmd/sgsrv"); err != nil {
		return binaries{}, err
	}
	return binaries{
		Gateway: filepath.Join(dir, "skillgate"), Ceiling: filepath.Join(dir, "ceiling"),
		JRPC2: filepath.Join(dir, "jrpc2srv"), Sourcegraph: filepath.Join(dir, "sgsrv"),
	}, nil
}

func goBuild(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = dir
	// The comparison servers are a module of their own: no workspace may
	// pull them into the gateway's build or the other way round.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// serverOpts configures a started server.
type serverOpts struct {
	TLS               bool // gateway only: serve TLS (with a self-signed certificate)
	CertFile, KeyFile string
	KeepaliveInterval time.Duration // gateway only; 0: an hour (no probes during load)
	KeepaliveTimeout  time.Duration
	Pprof             bool
	MaxInflight       int
	Extra             []string // gateway only: more serve flags
}

// server is a running server process.
type server struct {
	Kind, Addr, MetricsAddr string
	cmd                     *exec.Cmd
	done                    chan struct{}
	CAFile                  string // the self-signed certificate of a TLS gateway, if any
}

// PID returns the server's process id.
func (s *server) PID() int { return s.cmd.Process.Pid }

// MetricsURL returns the server's Prometheus endpoint, or "".
func (s *server) MetricsURL() string {
	if s.MetricsAddr == "" {
		return ""
	}
	return "http://" + s.MetricsAddr + "/metrics"
}

// startServer starts a server of kind on a free loopback port and waits
// until it accepts connections.
func startServer(ctx context.Context, kind string, bins binaries, o serverOpts, log zerolog.Logger) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{Kind: kind, Addr: addr, done: make(chan struct{})}
	var args []string
	switch kind {
	case kindGateway:
		if s.MetricsAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		args = append(gatewayArgs(addr, s.MetricsAddr, o), otherListenersOff(ctx, bins.Gateway)...)
	case kindCeiling, kindJRPC2, kindSourcegraph:
		args = []string{"-listen", addr}
	default:
		return nil, fmt.Errorf("%w: unknown server %q", errUsage, kind)
	}
	s.cmd = exec.Command(bins.of(kind), args...)
	s.cmd.Env = serverEnv()
	s.cmd.Stdout = io.Discard
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx, 20*time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	log.Debug().Str("server", kind).Str("addr", addr).Int("pid", s.PID()).Msg("server ready")
	return s, nil
}

func gatewayArgs(addr, metrics string, o serverOpts) []string {
	ki := o.KeepaliveInterval
	if ki <= 0 {
		ki = time.Hour
	}
	kt := o.KeepaliveTimeout
	if kt <= 0 {
		kt = max(ki, 5*time.Second)
	}
	args := []string{"serve", "--metrics-listen", metrics, "--log-level", "warn", "--log-format", "console",
		"--keepalive-interval", ki.String(), "--keepalive-timeout", kt.String(),
		"--init-timeout", "0", "--drain-timeout", "2s", "--max-connections", "0",
		"--max-inflight", strconv.Itoa(max(o.MaxInflight, 64)), "--pprof=" + strconv.FormatBool(o.Pprof)}
	args = append(args, o.Extra...)
	if o.TLS {
		return append(args, "--listen", "", "--tls-listen", addr, "--tls-cert", o.CertFile, "--tls-key", o.KeyFile)
	}
	return append(args, "--listen", addr)
}

// otherListenersOff turns off every listener of the gateway other than
// the framed ones and metrics (such as an HTTP front door), found in its
// help text, so that a run neither needs nor collides on their ports.
func otherListenersOff(ctx context.Context, bin string) []string {
	out, _ := exec.CommandContext(ctx, bin, "serve", "--help").CombinedOutput()
	var args []string
	for _, m := range listenFlag.FindAllStringSubmatch(string(out), -1) {
		switch m[1] {
		case "listen", "tls-listen", "metrics-listen":
		default:
			args = append(args, "--"+m[1], "")
		}
	}
	return args
}

var listenFlag = regexp.MustCompile(`--([a-z-]*listen) string`)

// serverEnv is this process's environment without SKILLGATE_* variables,
// so that the gateway runs on the flags given and nothing else.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKILLGATE_") {
			env = append(env, kv)
		}
	}
	return env
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (s *server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("%w: exited (%v)", errNotReady, s.cmd.ProcessState)
		default:
		}
		nc, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			_ = nc.Close()
			return nil
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
	return errNotReady
}

// stop ends the server: SIGTERM, then SIGKILL if it has not exited within
// a few seconds.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return
	case <-time.After(5 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}
