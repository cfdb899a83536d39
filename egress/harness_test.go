package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/egress/hostpattern"
	"github.com/skillgate/skillgate/internal/testlog"
	"github.com/skillgate/skillgate/metrics"
)

// upstream stands for the destinations: every dial is recorded and gets
// a pipe whose far end runs serve (by default: read nothing, close).
type upstream struct {
	mu    sync.Mutex
	addrs []string
	fail  map[string]error // dial errors by address
	serve func(net.Conn)
	wg    sync.WaitGroup
}

func (u *upstream) dial(_ context.Context, _, addr string) (net.Conn, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.addrs = append(u.addrs, addr)
	if err := u.fail[addr]; err != nil {
		return nil, err
	}
	c, s := net.Pipe()
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer s.Close()
		if u.serve != nil {
			u.serve(s)
		}
	}()
	return c, nil
}

func (u *upstream) dialled() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.addrs...)
}

// names resolves from a table; a missing name is an error.
type names map[string][]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := n[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	out := make([]netip.Addr, 0, len(list))
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// harness is one Run served on loopback with its logs, notes and
// metrics; stop ends it and waits for every handler, after which what
// they recorded is complete.
type harness struct {
	addr    string
	up      *upstream
	metrics *metrics.Metrics
	logs    *testlog.Buffer
	mu      sync.Mutex
	notes   []string
	stop    func()
}

func start(t *testing.T, cfg Config, pol *Policy, up *upstream) *harness {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return startOn(t, cfg, pol, up, l)
}

// startOn is start on a listener of the test's.
func startOn(t *testing.T, cfg Config, pol *Policy, up *upstream, l net.Listener) *harness {
	t.Helper()
	h := &harness{up: up, metrics: metrics.New("test"), logs: &testlog.Buffer{}}
	cfg.Dial, cfg.Metrics, cfg.Logger = up.dial, h.metrics, zerolog.New(h.logs)
	if cfg.Resolver == nil {
		cfg.Resolver = names{}
	}
	p, err := New(cfg)
	require.NoError(t, err)
	h.addr = l.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.ForRun(RunInfo{RunID: "run-1", Skill: "s", Identity: "id"}, pol).Serve(l, func(s string) {
			h.mu.Lock()
			h.notes = append(h.notes, s)
			h.mu.Unlock()
		})
	}()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			_ = l.Close()
			<-done
			up.wg.Wait()
		})
	}
	t.Cleanup(h.stop)
	return h
}

// connect opens a CONNECT tunnel and returns the connection after the
// proxy's answer, or that answer when it is not a 200.
func (h *harness) connect(t *testing.T, target string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, nil, resp.Status + " " + strings.TrimSpace(string(body))
	}
	return c, br, resp.Status
}

func allowAll() *Policy { return &Policy{Allow: [][]hostpattern.Pattern{{hostpattern.AnyHost(0)}}} }
