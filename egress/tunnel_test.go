package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/egress/hostpattern"
)

// A CONNECT tunnel carries bytes both ways to exactly the checked
// address, and the connection is logged and counted as allowed with its
// byte counts; nothing is noted in the run's logs.
func TestConnectTunnelRelaysBothWays(t *testing.T) {
	up := &upstream{serve: func(s net.Conn) {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(s, buf); err == nil && string(buf) == "ping" {
			_, _ = io.WriteString(s, "pong!")
		}
	}}
	h := start(t, Config{Resolver: names{"api.example": {"93.184.216.34"}}}, allowAll(), up)
	c, br, status := h.connect(t, "api.example:443")
	require.Equal(t, "200 Connection established", status)
	_, err := io.WriteString(c, "ping")
	require.NoError(t, err)
	got, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "pong!", string(got))
	_ = c.Close()
	h.stop()

	assert.Equal(t, []string{"93.184.216.34:443"}, up.dialled())
	assert.Empty(t, h.notes)
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.EgressConnections.WithLabelValues("allowed")))
	assert.Equal(t, 4.0, testutil.ToFloat64(h.metrics.EgressBytes.WithLabelValues("up")))
	assert.Equal(t, 5.0, testutil.ToFloat64(h.metrics.EgressBytes.WithLabelValues("down")))
	assert.Equal(t, uint64(1), observations(t, h.metrics.EgressDuration))
	logs := h.logs.String()
	for _, field := range []string{`"level":"info"`, `"run_id":"run-1"`, `"skill":"s"`, `"identity":"id"`,
		`"host":"api.example"`, `"port":443`, `"bytes_up":4`, `"bytes_down":5`, `"result":"allowed"`, `"addr":"93.184.216.34"`} {
		assert.Contains(t, logs, field)
	}
	assert.NotContains(t, logs, `"detail"`)
}

// A refusal is a warning in the gateway's log, a line in the run's own
// log, and a count under its reason; an allowed connection next to it
// is none of these.
func TestRefusalsAreNotedLoggedAndCounted(t *testing.T) {
	pats, err := hostpattern.ParseList([]string{"secret.example:*"})
	require.NoError(t, err)
	pol := &Policy{Allow: allowAll().Allow, Deny: pats}
	h := start(t, Config{Resolver: names{"open.example": {"93.184.216.34"}}}, pol, &upstream{})
	_, _, status := h.connect(t, "secret.example:443")
	assert.Equal(t, "403 Forbidden egress denied: secret.example:443 (denied)", status)
	c, _, status := h.connect(t, "open.example:443")
	require.Equal(t, "200 Connection established", status)
	_ = c.Close()
	h.stop()

	assert.Equal(t, []string{"egress denied: secret.example:443 (denied)\n"}, h.notes)
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.EgressConnections.WithLabelValues("denied")))
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.EgressConnections.WithLabelValues("allowed")))
	assert.Equal(t, uint64(1), observations(t, h.metrics.EgressDuration), "only allowed connections are timed")
	var warn, info int
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		switch {
		case strings.Contains(line, `"level":"warn"`) && strings.Contains(line, `"result":"denied"`):
			warn++
		case strings.Contains(line, `"level":"info"`) && strings.Contains(line, `"result":"allowed"`):
			info++
		}
	}
	assert.Equal(t, 1, warn)
	assert.Equal(t, 1, info)
}

// connectLen is the size of the CONNECT request harness.connect sends,
// which the run's byte cap counts.
func connectLen(target string) int {
	return len("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
}

// The run's byte cap in the direction towards it: exactly the cap
// arrives, one byte more ends the connection before any of it.
func TestByteCapTowardsTheRun(t *testing.T) {
	// The cap is the same both ways, and the request is charged too.
	max := connectLen("a.example:443") + 10
	for _, tc := range []struct {
		sent int
		want string
	}{{max, strings.Repeat("x", max)}, {max + 1, ""}} {
		payload := strings.Repeat("x", tc.sent)
		up := &upstream{serve: func(s net.Conn) { _, _ = io.WriteString(s, payload) }}
		h := start(t, Config{MaxBytes: int64(max), Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(), up)
		c, br, status := h.connect(t, "a.example:443")
		require.Equal(t, "200 Connection established", status)
		got, _ := io.ReadAll(br)
		assert.Equal(t, tc.want, string(got), "%d bytes against a cap of %d", tc.sent, max)
		_ = c.Close()
		h.stop()
	}
}

// The same cap from the run towards the destination, where the CONNECT
// request counts too.
func TestByteCapFromTheRun(t *testing.T) {
	max := int64(connectLen("a.example:443") + 10)
	for _, sent := range []int{10, 11} {
		received := make(chan int, 1)
		up := &upstream{serve: func(s net.Conn) {
			n, _ := io.Copy(io.Discard, s)
			received <- int(n)
		}}
		h := start(t, Config{MaxBytes: max, Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(), up)
		c, _, status := h.connect(t, "a.example:443")
		require.Equal(t, "200 Connection established", status)
		_, err := io.WriteString(c, strings.Repeat("x", sent))
		require.NoError(t, err)
		require.NoError(t, c.(*net.TCPConn).CloseWrite())
		n := <-received
		if sent == 10 {
			assert.Equal(t, 10, n, "exactly the cap less the request goes through")
		} else {
			assert.Less(t, n, 11, "past the cap the connection is cut")
		}
		_ = c.Close()
		h.stop()
	}
}

// The cap is the run's, not each connection's: two tunnels that each
// get a little more than half the cap get all and nothing. (The cap
// leaves room for the two requests, which count the other way.)
func TestByteCapIsPerRun(t *testing.T) {
	max := 2*connectLen("a.example:443") + 10
	payload := strings.Repeat("abcdef", max/12+1)
	up := &upstream{serve: func(s net.Conn) { _, _ = io.WriteString(s, payload) }}
	h := start(t, Config{MaxBytes: int64(max), Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(), up)
	c, br, status := h.connect(t, "a.example:443")
	require.Equal(t, "200 Connection established", status)
	got, _ := io.ReadAll(br)
	assert.Equal(t, payload, string(got))
	_ = c.Close()

	c2, err := net.Dial("tcp", h.addr)
	require.NoError(t, err)
	defer c2.Close()
	_, _ = io.WriteString(c2, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n\r\n")
	rest, _ := io.ReadAll(c2)
	assert.NotContains(t, string(rest), "abcdef", "the second tunnel gets none of its bytes")
}

// Plain HTTP is forwarded in origin form without the proxy's own
// headers, and the upstream connection closes after one response.
func TestPlainHTTPForwarding(t *testing.T) {
	got := make(chan *http.Request, 1)
	up := &upstream{serve: func(s net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(s))
		if err != nil {
			close(got)
			return
		}
		got <- req
		_, _ = io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}}
	h := start(t, Config{Resolver: names{"api.example": {"93.184.216.34"}}}, allowAll(), up)
	assert.Equal(t, "200 ok", request(t, h.addr, "GET http://api.example/path?q=1 HTTP/1.1\r\nHost: api.example\r\n"+
		"Proxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nX-Keep: 1\r\n\r\n"))
	req := <-got
	require.NotNil(t, req)
	assert.Equal(t, "/path?q=1", req.RequestURI)
	assert.Equal(t, "api.example", req.Host)
	assert.Equal(t, "1", req.Header.Get("X-Keep"))
	assert.Empty(t, req.Header.Get("Proxy-Authorization"))
	assert.Empty(t, req.Header.Get("Proxy-Connection"))
	assert.True(t, req.Close, "Connection: close")
	assert.Equal(t, []string{"93.184.216.34:80"}, up.dialled())
}

// A plain HTTP request's body counts against the run's cap like a
// tunnel's bytes: a body past the cap never reaches the destination
// whole, and a request under it is counted in the bytes sent.
func TestByteCapPlainHTTPBody(t *testing.T) {
	received := make(chan int, 1)
	up := &upstream{serve: func(s net.Conn) {
		// Read one request, however it ends, then answer: without the
		// cap the whole body arrives and the test fails, not hangs.
		cr := &countingReader{r: s}
		if req, err := http.ReadRequest(bufio.NewReader(cr)); err == nil {
			_, _ = io.Copy(io.Discard, req.Body)
		}
		received <- cr.n
		_, _ = io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}}
	h := start(t, Config{MaxBytes: 1000, Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(), up)
	c, err := net.Dial("tcp", h.addr)
	require.NoError(t, err)
	defer c.Close()
	body := strings.Repeat("x", 5000)
	_, err = io.WriteString(c, "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5000\r\n\r\n"+body)
	require.NoError(t, err)
	assert.LessOrEqual(t, <-received, 1000)
	answer, _ := io.ReadAll(c)
	assert.NotContains(t, string(answer), "200")
	h.stop()

	small := make(chan int, 1)
	up2 := &upstream{serve: func(s net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(s))
		if err == nil {
			b, _ := io.ReadAll(req.Body)
			small <- len(b)
		}
		_, _ = io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}}
	h2 := start(t, Config{MaxBytes: 1000, Resolver: names{"a.example": {"93.184.216.34"}}}, allowAll(), up2)
	assert.Equal(t, "200 ok", request(t, h2.addr, "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 100\r\n\r\n"+body[:100]))
	assert.Equal(t, 100, <-small)
	h2.stop()
	sent := testutil.ToFloat64(h2.metrics.EgressBytes.WithLabelValues("up"))
	assert.Greater(t, sent, 100.0, "the request line, headers and body are counted")
	assert.Less(t, sent, 1000.0)
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

// observations is how many values a histogram has observed (testutil's
// CollectAndCount counts the histogram itself, always one).
func observations(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleCount()
}
