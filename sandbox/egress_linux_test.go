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

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/egress"
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
func egressFor(t *testing.T, m *metrics.Metrics, res egress.Resolver, allow, private []string, edit ...func(*egress.Config)) Egress {
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
	a, err := egress.ParsePatterns(allow)
	require.NoError(t, err)
	pr, err := egress.ParsePrivates(private)
	require.NoError(t, err)
	return p.ForRun(egress.RunInfo{RunID: t.Name()}, &egress.Policy{Allow: [][]egress.Pattern{a}, Private: pr})
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
