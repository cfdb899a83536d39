package sandbox

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/egress"
	"github.com/skillgate/skillgate/egress/hostpattern"
	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/metrics"
)

// egressSite is a test HTTP and HTTPS server on loopback; open counts the
// connections the servers hold.
type egressSite struct {
	http, https *httptest.Server
	caPEM       string
	open        atomic.Int64
}

func newEgressSite(t *testing.T) *egressSite {
	t.Helper()
	s := &egressSite{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = io.CopyN(w, zeroReader{}, 4<<20)
			return
		}
		_, _ = fmt.Fprintf(w, "hello %s", r.URL.Path)
	})
	track := func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.open.Add(-1)
		}
	}
	s.http = httptest.NewUnstartedServer(h)
	s.http.Config.ConnState = track
	s.http.Start()
	s.https = httptest.NewUnstartedServer(h)
	s.https.Config.ConnState = track
	s.https.StartTLS()
	s.caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.https.Certificate().Raw}))
	t.Cleanup(s.https.Close)
	t.Cleanup(s.http.Close)
	return s
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func hostPort(u string) string {
	return strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
}

// fakeResolver answers names from a table, like a DNS server the test
// controls (a rebinding attacker's included).
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// egressFor builds a proxy with m's metrics and the policy from
// patterns.
func egressFor(t testing.TB, m *metrics.Metrics, res egress.Resolver, allow, private []string, edit ...func(*egress.Config)) Egress {
	t.Helper()
	cfg := egress.DefaultConfig()
	cfg.Metrics = m
	if res != nil {
		cfg.Resolver = res
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := egress.New(cfg)
	require.NoError(t, err)
	a, err := hostpattern.ParseList(allow)
	require.NoError(t, err)
	pr, err := egress.ParsePrivates(private)
	require.NoError(t, err)
	return p.ForRun(egress.RunInfo{RunID: t.Name()}, &egress.Policy{Allow: [][]hostpattern.Pattern{a}, Private: pr})
}

const fetchCode = `
import os, ssl, urllib.request, urllib.error
def get(url):
    ctx = ssl.create_default_context(cadata=os.environ.get("TEST_CA"))
    try:
        with urllib.request.urlopen(url, timeout=20, context=ctx) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        return "HTTP %d %s" % (e.code, e.read().decode().strip())
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
def main(args):
    return [get(u) for u in args["urls"]]
`

func runFetch(t *testing.T, r *Runner, e Egress, env map[string]string, urls ...string) []string {
	t.Helper()
	res := run(t, r, fetchCode, map[string]any{"urls": urls}, func(j *Job) { j.Egress, j.Env = e, env })
	requireCompleted(t, res)
	var got []string
	require.NoError(t, json.Unmarshal(res.Output, &got), "logs: %s", res.Logs)
	return got
}

func TestEgressHTTPAndHTTPS(t *testing.T) {
	r := sharedRunner(t)
	site := newEgressSite(t)
	m := metrics.New("test")
	hp, hps := hostPort(site.http.URL), hostPort(site.https.URL)
	e := egressFor(t, m, nil, []string{hp, hps}, []string{hp, hps})
	got := runFetch(t, r, e, map[string]string{"TEST_CA": site.caPEM},
		site.http.URL+"/plain", site.https.URL+"/tls")
	assert.Equal(t, []string{"hello /plain", "hello /tls"}, got)
	assert.Equal(t, 2.0, testutil.ToFloat64(m.EgressConnections.WithLabelValues("allowed")))
	assert.Positive(t, testutil.ToFloat64(m.EgressBytes.WithLabelValues("down")))
}

func TestEgressRefusals(t *testing.T) {
	r := sharedRunner(t)
	site := newEgressSite(t)
	m := metrics.New("test")
	hp := hostPort(site.http.URL)
	_, port, _ := net.SplitHostPort(hp)
	res := fakeResolver{
		// A name of the allowed list that resolves to loopback: what a
		// rebinding attacker's DNS answers once the name was allowed.
		"rebind.test": {netip.MustParseAddr("127.0.0.2")},
		// One public and one private answer: refused as a whole.
		"mixed.test": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")},
	}
	allow := []string{hp, "169.254.169.254:80", "10.0.0.1:80", "*.test:" + port, "127.0.0.1:1"}
	e := egressFor(t, m, res, allow, []string{hp})
	got := runFetch(t, r, e, nil,
		site.http.URL+"/ok",
		"http://127.0.0.1:2/", // port outside the list
		"http://127.0.0.1:1/", // listed, but loopback is not allowed there
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/",
		"http://rebind.test:"+port+"/",
		"http://mixed.test:"+port+"/",
		"http://nowhere.test:"+port+"/",
	)
	want := []string{
		"hello /ok",
		"HTTP 403 egress denied: 127.0.0.1:2 (not_allowed)",
		"HTTP 403 egress denied: 127.0.0.1:1 (loopback address 127.0.0.1)",
		"HTTP 403 egress denied: 169.254.169.254:80 (metadata address 169.254.169.254)",
		"HTTP 403 egress denied: 10.0.0.1:80 (private address 10.0.0.1)",
		"HTTP 403 egress denied: rebind.test:" + port + " (loopback address 127.0.0.2)",
		"HTTP 403 egress denied: mixed.test:" + port + " (private address 10.1.2.3)",
		"HTTP 403 egress denied: nowhere.test:" + port + " (resolve_failed: the name does not resolve)",
	}
	assert.Equal(t, want, got)
	for reason, n := range map[string]float64{
		"allowed": 1, "not_allowed": 1, "loopback": 2, "metadata": 1, "private": 2, "resolve_failed": 1,
	} {
		assert.Equal(t, n, testutil.ToFloat64(m.EgressConnections.WithLabelValues(reason)), reason)
	}
}

func TestEgressRefusalsInRunLogs(t *testing.T) {
	r := sharedRunner(t)
	e := egressFor(t, nil, nil, []string{"example.invalid:443"}, nil)
	code := "import urllib.request\ndef main(args):\n    try:\n        urllib.request.urlopen('http://127.0.0.1:9/', timeout=20)\n    except Exception as e:\n        return str(e)\n"
	res := run(t, r, code, nil, func(j *Job) { j.Egress = e })
	requireCompleted(t, res)
	assert.Contains(t, string(res.Output), "403")
	assert.Contains(t, res.Logs, "egress denied: 127.0.0.1:9 (not_allowed)")
}

// socketProbe tries every way out a run could try and reports, for each,
// "ok" or the error.
const socketProbe = `
import socket
def probe(fam, typ, proto=0, addr=None):
    try:
        s = socket.socket(fam, typ, proto)
    except OSError as e:
        return "socket: " + (e.strerror or str(e))
    try:
        s.settimeout(5)
        if addr:
            s.connect(addr)
            if typ == socket.SOCK_DGRAM:
                s.send(b"x")
        return "ok"
    except OSError as e:
        return "connect: " + (e.strerror or str(e))
    finally:
        s.close()
def main(args):
    return {
        "tcp_proxy": probe(socket.AF_INET, socket.SOCK_STREAM, 0, ("127.0.0.1", 3128)),
        "tcp_other": probe(socket.AF_INET, socket.SOCK_STREAM, 0, ("127.0.0.1", 3129)),
        "tcp_public": probe(socket.AF_INET, socket.SOCK_STREAM, 0, ("93.184.216.34", 80)),
        "udp": probe(socket.AF_INET, socket.SOCK_DGRAM, 0, ("127.0.0.1", 53)),
        "tcp6": probe(socket.AF_INET6, socket.SOCK_STREAM, 0, ("::1", 3128)),
        "raw": probe(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
        "packet": probe(socket.AF_PACKET, socket.SOCK_RAW),
        "dns": dns(),
    }
def dns():
    try:
        socket.getaddrinfo("example.com", 80)
        return "ok"
    except OSError as e:
        return "dns: " + str(e)
`

func TestEgressNoNetworkWithoutEgress(t *testing.T) {
	r := sharedRunner(t)
	got := output(t, run(t, r, socketProbe, nil))
	for k, v := range got {
		assert.NotEqual(t, "ok", v, "%s must fail without network", k)
	}
	const hint = " (this run has no network: a skill gets it from the destinations its skill.toml lists " +
		"in [permissions] network, run_code from the caller's run_code_network in the auth file (--run-code-network without one))"
	assert.Equal(t, "socket: Address family not supported by protocol"+hint, got["tcp_proxy"])
	assert.Equal(t, "socket: Address family not supported by protocol"+hint, got["udp"])
	assert.True(t, strings.HasPrefix(got["dns"].(string), "dns: [Errno -3] Temporary failure in name resolution"), got["dns"])
	assert.True(t, strings.HasSuffix(got["dns"].(string), hint), "a name lookup says why it fails: %s", got["dns"])
}

func TestEgressOnlyTheProxyWithEgress(t *testing.T) {
	r := sharedRunner(t)
	e := egressFor(t, nil, nil, []string{"*"}, nil)
	got := output(t, run(t, r, socketProbe, nil, func(j *Job) { j.Egress = e }))
	t.Logf("%v", got)
	assert.Equal(t, "ok", got["tcp_proxy"])
	for _, k := range []string{"tcp_other", "tcp_public", "udp", "tcp6", "raw", "packet", "dns"} {
		assert.NotEqual(t, "ok", got[k], "%s must fail: only the proxy is reachable", k)
	}
	assert.Equal(t, "socket: Protocol not supported", got["udp"])
	assert.Equal(t, "socket: Address family not supported by protocol", got["tcp6"])
}

// countingDial counts the proxy's upstream connections still open and
// signals each new one.
type countingDial struct {
	open   atomic.Int64
	dialed chan struct{}
}

func newCountingDial() *countingDial { return &countingDial{dialed: make(chan struct{}, 64)} }

func (d *countingDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.open.Add(1)
	d.dialed <- struct{}{}
	return &countedConn{Conn: c, d: d}, nil
}

type countedConn struct {
	net.Conn
	d    *countingDial
	once atomic.Bool
}

func (c *countedConn) Close() error {
	if c.once.CompareAndSwap(false, true) {
		c.d.open.Add(-1)
	}
	return c.Conn.Close()
}

func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// tunnelCode opens n CONNECT tunnels to args["target"], reports each
// status line, then sleeps args["sleep"] seconds holding them.
const tunnelCode = `
import socket, time
def main(args):
    socks, out = [], []
    for i in range(args["n"]):
        s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (args["target"], args["target"])).encode())
        out.append(s.recv(200).decode().split("\r\n")[0])
        socks.append(s)
    time.sleep(args.get("sleep", 0))
    return out
`

func TestEgressConnectionLimit(t *testing.T) {
	r := sharedRunner(t)
	site := newEgressSite(t)
	hp := hostPort(site.http.URL)
	d := newCountingDial()
	e := egressFor(t, nil, nil, []string{hp}, []string{hp}, func(c *egress.Config) { c.Dial = d.dial })
	var got []string
	require.NoError(t, json.Unmarshal(output0(t, run(t, r, tunnelCode, map[string]any{"n": 17, "target": hp}, func(j *Job) { j.Egress = e })), &got))
	require.Len(t, got, 17)
	for i := 0; i < 16; i++ {
		assert.Equal(t, "HTTP/1.1 200 Connection established", got[i], "tunnel %d", i)
	}
	assert.Equal(t, "HTTP/1.1 403 Forbidden", got[16])
	assert.Zero(t, d.open.Load(), "upstream connections left open")
}

func output0(t *testing.T, res *Result) json.RawMessage {
	t.Helper()
	requireCompleted(t, res)
	return res.Output
}

func TestEgressByteCap(t *testing.T) {
	r := sharedRunner(t)
	site := newEgressSite(t)
	hp := hostPort(site.http.URL)
	e := egressFor(t, nil, nil, []string{hp}, []string{hp}, func(c *egress.Config) { c.MaxBytes = 1 << 20 })
	code := "import urllib.request\ndef main(args):\n    n = 0\n    try:\n        with urllib.request.urlopen(args['url'], timeout=20) as r:\n" +
		"            while True:\n                b = r.read(65536)\n                if not b:\n                    break\n                n += len(b)\n" +
		"    except Exception as e:\n        return [n, type(e).__name__]\n    return [n, 'complete']\n"
	res := run(t, r, code, map[string]any{"url": site.http.URL + "/big"}, func(j *Job) { j.Egress = e })
	var got []any
	require.NoError(t, json.Unmarshal(output0(t, res), &got))
	assert.Less(t, got[0], float64(1<<20)+1, "bytes read past the cap")
	assert.NotEqual(t, "complete", got[1])
}

func TestEgressRunEndClosesConnections(t *testing.T) {
	r := sharedRunner(t)
	site := newEgressSite(t)
	hp := hostPort(site.http.URL)
	args := map[string]any{"n": 3, "target": hp, "sleep": 120}
	t.Run("cancelled", func(t *testing.T) {
		d := newCountingDial()
		e := egressFor(t, nil, nil, []string{hp}, []string{hp}, func(c *egress.Config) { c.Dial = d.dial })
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for range 3 {
				<-d.dialed
			}
			cancel()
		}()
		data, _ := json.Marshal(args)
		_, err := r.Run(ctx, Job{RunID: t.Name(), Code: tunnelCode, Args: data, Egress: e})
		require.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, d.open.Load(), "upstream connections left open")
	})
	t.Run("timed out", func(t *testing.T) {
		d := newCountingDial()
		e := egressFor(t, nil, nil, []string{hp}, []string{hp}, func(c *egress.Config) { c.Dial = d.dial })
		res := run(t, r, tunnelCode, args, func(j *Job) { j.Egress, j.Timeout = e, 3*time.Second })
		requireFailed(t, res, runerror.Timeout)
		assert.Equal(t, 3, len(d.dialed), "the run opened its tunnels before the timeout")
		assert.Zero(t, d.open.Load(), "upstream connections left open")
	})
}
