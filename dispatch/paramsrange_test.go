package dispatch

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testpki"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// dialRaw serves the dispatcher on a fresh server over kind ("pipe",
// "tcp", "tls") and returns the client's end of one connection.
func (e *env) dialRaw(kind string) net.Conn {
	e.t.Helper()
	cfg := session.DefaultConfig()
	cfg.MaxMessageSize = testMaxMessage
	cfg.Metrics = e.metrics
	srv, err := newFramedServer(cfg, e.d)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = srv.Close() })
	if kind == "pipe" {
		a, b := net.Pipe()
		srv.ServeConn(b, "pipe")
		e.t.Cleanup(func() { _ = a.Close() })
		return a
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(e.t, err)
	var clientTLS *tls.Config
	if kind == "tls" {
		ca := testpki.NewCA("params-range")
		ln = tls.NewListener(ln, testpki.ServerConfig(ca.Server(), nil))
		clientTLS = testpki.ClientConfig(ca.Pool(), nil)
	}
	go func() { _ = srv.Serve(ln, kind) }()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(e.t, err)
	if clientTLS != nil {
		nc = tls.Client(nc, clientTLS)
	}
	e.t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// afterFirstFrame reads nc until the gateway closes it and returns what
// came after the first frame (the answer to Initialize).
func afterFirstFrame(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	all, err := io.ReadAll(nc)
	require.NoError(t, err, "the gateway must close the connection; read so far: %q", all)
	require.GreaterOrEqual(t, len(all), transport.HeaderLen)
	n, err := strconv.ParseUint(string(all[:8]), 16, 32)
	require.NoError(t, err)
	first := transport.FrameOverhead + int(n)
	require.GreaterOrEqual(t, len(all), first)
	return all[first:]
}

// Issue 26, item 17: seed 001 says "if an incoming message contains values
// outside application imposed ranges, the receiver MUST handle this as a
// JSON parsing error and abort the connection". An integer parameter
// outside its documented range (over or under it, or no integer at all)
// is answered on the framed transport by exactly this _CloseReason and a
// close, over a pipe, TCP and TLS; over HTTP it stays -32602.
func TestNumberOutOfRangeAbortsFramed(t *testing.T) {
	e := newEnv(t, examplesDir())
	const initialize = `00000056:{"jsonrpc":"2.0","method":"Initialize","params":{"protocol_version":"1.0"},"id":"c-1"}` + "\n"
	cases := []struct {
		name, request, closeReason string
	}{
		{"over the range",
			`00000051:{"jsonrpc":"2.0","method":"list_skills","params":{"limit":2147483648},"id":"c-2"}` + "\n",
			`000000e3:{"jsonrpc":"2.0","method":"_CloseReason","params":{"error":{"code":-32700,"message":"Parse error.","data":{"string_code":"JSONRPC_PARSE_ERROR","details":"parameter \"limit\" must be between 1 and 2147483647, not 2147483648"}}}}` + "\n"},
		{"under the range",
			`00000048:{"jsonrpc":"2.0","method":"list_skills","params":{"limit":0},"id":"c-2"}` + "\n",
			`000000da:{"jsonrpc":"2.0","method":"_CloseReason","params":{"error":{"code":-32700,"message":"Parse error.","data":{"string_code":"JSONRPC_PARSE_ERROR","details":"parameter \"limit\" must be between 1 and 2147483647, not 0"}}}}` + "\n"},
		{"beyond any integer",
			`0000004c:{"jsonrpc":"2.0","method":"list_skills","params":{"limit":1e400},"id":"c-2"}` + "\n",
			`000000d0:{"jsonrpc":"2.0","method":"_CloseReason","params":{"error":{"code":-32700,"message":"Parse error.","data":{"string_code":"JSONRPC_PARSE_ERROR","details":"parameter \"limit\" must be an integer, not 1e400"}}}}` + "\n"},
	}
	for _, kind := range []string{"pipe", "tcp", "tls"} {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				nc := e.dialRaw(kind)
				go func() { _, _ = nc.Write([]byte(initialize + tc.request)) }()
				assert.Equal(t, tc.closeReason, string(afterFirstFrame(t, nc)))
			})
		}
	}
	h := e.httpFront("")
	for _, limit := range []string{"2147483648", "0", "1e400"} {
		_, err := h.call("list_skills", `{"limit":`+limit+`}`)
		require.NotNil(t, err)
		assert.Equal(t, transport.StringInvalidParams, err.EffectiveCode(), limit)
	}
}

// The bounds themselves are inside the range: 2147483647 is answered and
// the connection lives on.
func TestNumberAtRangeBoundAnswered(t *testing.T) {
	e := newEnv(t, examplesDir())
	c := e.framed()
	for _, limit := range []string{"1", "2147483647", "2147483647.0", "21474836.47e2"} {
		_, err := c.Call(t.Context(), "list_skills", json.RawMessage(`{"limit":`+limit+`}`))
		require.NoError(t, err, limit)
	}
	assert.Nil(t, c.Err())
}
