package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawAnswer sends one request to the proxy and returns the status,
// content type and body of its answer.
func rawAnswer(t *testing.T, proxy, raw string) (int, string, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// An allowed destination that does not answer is a 502 whose body is
// spec 004's ENDPOINT_UNREACHABLE with its retry hint; the run's logs
// say it was unreachable, the metrics count connect_failed.
func TestUnreachableDestinationIsEndpointUnreachable(t *testing.T) {
	up := &upstream{fail: map[string]error{"93.184.216.40:443": errors.New("connection refused")}}
	h := start(t, Config{Resolver: names{"down.example": {"93.184.216.40"}}}, allowAll(), up)
	status, ctype, body := rawAnswer(t, h.addr, "CONNECT down.example:443 HTTP/1.1\r\nHost: down.example:443\r\n\r\n")
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Equal(t, "application/json", ctype)
	assert.JSONEq(t, `{"error":{"code":"ENDPOINT_UNREACHABLE","message":"egress: cannot connect to down.example:443",
		"details":{"endpoint_url":"tcp://down.example:443","reason":"connection refused"},
		"retry":{"suggested_delay_ms":2000,"max_attempts":5}}}`, body)
	h.stop()
	assert.Equal(t, []string{"egress unreachable: down.example:443 (connect_failed: connection refused)\n"}, h.notes)
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.EgressConnections.WithLabelValues("connect_failed")))
}

// The same through a real dial to a closed port, for a plain HTTP
// request: endpoint_url is the URL asked for, without its credentials.
func TestUnreachablePlainHTTPNamesTheURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	rules, err := ParsePrivates([]string{"127.0.0.1:" + port})
	require.NoError(t, err)
	proxy := serve(t, Config{}, &Policy{Allow: allowAll().Allow, Private: rules})
	status, _, body := rawAnswer(t, proxy, "GET http://user:secret@127.0.0.1:"+port+"/v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	assert.Equal(t, http.StatusBadGateway, status)
	assert.JSONEq(t, `{"error":{"code":"ENDPOINT_UNREACHABLE","message":"egress: cannot connect to 127.0.0.1:`+port+`",
		"details":{"endpoint_url":"http://127.0.0.1:`+port+`/v1/x?q=1",
		"reason":"dial tcp 127.0.0.1:`+port+`: connect: connection refused"},
		"retry":{"suggested_delay_ms":2000,"max_attempts":5}}}`, body)
}

// Refusals by rule keep their 403 naming the rule.
func TestRefusalsKeepTheirForbidden(t *testing.T) {
	h := start(t, Config{Resolver: names{"a.example": {"10.0.0.1"}}}, allowAll(), &upstream{})
	status, ctype, body := rawAnswer(t, h.addr, "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, "text/plain; charset=utf-8", ctype)
	assert.Equal(t, "egress denied: a.example:443 (private address 10.0.0.1)\n", body)
}
