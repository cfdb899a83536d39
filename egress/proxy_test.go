package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rebinder answers a public address first and loopback afterwards, as a
// rebinding attacker's DNS server does.
type rebinder struct {
	mu    sync.Mutex
	calls int
}

func (r *rebinder) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// recordDial records the addresses dialled and connects each to a pipe
// that answers a fixed HTTP response.
type recordDial struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recordDial) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	c, s := net.Pipe()
	go func() {
		defer s.Close()
		_, _ = http.ReadRequest(bufio.NewReader(s))
		_, _ = io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	}()
	return c, nil
}

// serve runs one Run on a loopback listener and returns its address and
// a stop that waits for it.
func serve(t *testing.T, cfg Config, pol *Policy) string {
	t.Helper()
	p, err := New(cfg)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.ForRun(RunInfo{RunID: t.Name()}, pol).Serve(l, nil)
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
	})
	return l.Addr().String()
}

func request(t *testing.T, proxy, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

func TestProxyDialsTheAddressItChecked(t *testing.T) {
	res, d := &rebinder{}, &recordDial{}
	pats, err := hostpattern.ParseList([]string{"rebind.example:80"})
	require.NoError(t, err)
	addr := serve(t, Config{Resolver: res, Dial: d.dial}, &Policy{Allow: [][]hostpattern.Pattern{pats}})
	assert.Equal(t, "200 ok", request(t, addr, "GET http://rebind.example/ HTTP/1.1\r\nHost: rebind.example\r\n\r\n"))
	assert.Equal(t, "403 egress denied: rebind.example:80 (loopback address 127.0.0.1)",
		request(t, addr, "GET http://rebind.example/ HTTP/1.1\r\nHost: rebind.example\r\n\r\n"))
	assert.Equal(t, []string{"93.184.216.34:80"}, d.addrs, "only the checked public address is dialled")
}

func TestProxyBadRequests(t *testing.T) {
	d := &recordDial{}
	addr := serve(t, Config{Dial: d.dial, Resolver: fixedResolver{}}, &Policy{Allow: [][]hostpattern.Pattern{{hostpattern.AnyHost(0)}}})
	for raw, want := range map[string]string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n":                           "403 egress denied: ? (bad_request: only CONNECT and http:// requests are proxied)",
		"GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n":                    "403 egress denied: ? (bad_request: only CONNECT and http:// requests are proxied)",
		"CONNECT x HTTP/1.1\r\nHost: x\r\n\r\n":                       "403 egress denied: ? (bad_request: bad destination \"x\")",
		"CONNECT x:0 HTTP/1.1\r\nHost: x\r\n\r\n":                     "403 egress denied: ? (bad_request: bad destination \"x:0\")",
		"garbage\r\n\r\n":                                             "403 egress denied: ? (bad_request: unreadable proxy request)",
		"CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: x\r\n\r\n":      "403 egress denied: 169.254.169.254:80 (metadata address 169.254.169.254)",
		"GET http://[::1]:8080/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n": "403 egress denied: [::1]:8080 (loopback address ::1)",
	} {
		assert.Equal(t, want, request(t, addr, raw), raw)
	}
	assert.Empty(t, d.addrs)
}

type fixedResolver struct{}

func (fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

func TestConfigValidate(t *testing.T) {
	assert.NoError(t, Config{}.Validate())
	assert.Error(t, Config{MaxConns: -1}.Validate())
	assert.Error(t, Config{MaxBytes: -1}.Validate())
	assert.Error(t, Config{ConnectTimeout: -1}.Validate())
}

func TestProxyIdleConnectionsCountAgainstTheLimit(t *testing.T) {
	d := &recordDial{}
	addr := serve(t, Config{Dial: d.dial, Resolver: fixedResolver{}, MaxConns: 2}, &Policy{Allow: [][]hostpattern.Pattern{{hostpattern.AnyHost(0)}}})
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
	}
	// The two idle connections hold both slots, whatever order the
	// proxy accepts in: this one is answered with the reason.
	assert.Equal(t, "403 egress denied: a.example:80 (connection_limit: more than 2 concurrent connections)",
		request(t, addr, "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n"))
	assert.Empty(t, d.addrs)
}

func TestPatternIPLiteralsAreCanonical(t *testing.T) {
	p, err := hostpattern.Parse("[::0001]:80")
	require.NoError(t, err)
	pol := &Policy{Allow: [][]hostpattern.Pattern{{p}}}
	assert.Equal(t, ReasonNone, pol.CheckName("::1", 80))
	assert.Equal(t, ReasonNone, pol.CheckName("[0:0::1]", 80))
}
