// Package wiretest is a small framed JSON-RPC client for the tests of the
// comparison servers.
package wiretest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/bench/framing"
)

// Response is a decoded response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// Client is a framed connection to a server under test.
type Client struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// Dial connects to addr; the connection closes when the test ends.
func Dial(t *testing.T, addr string) *Client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(20*time.Second)))
	return &Client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// Request returns the body of a request with a string id.
func Request(id, method, params string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":%q,"params":%s,"id":%q}`, method, params, id)
}

// Send writes the bodies as frames in one write.
func (c *Client) Send(bodies ...[]byte) {
	c.t.Helper()
	var wire []byte
	for _, b := range bodies {
		wire = framing.Append(wire, b)
	}
	_, err := c.nc.Write(wire)
	require.NoError(c.t, err)
}

// Recv reads one response.
func (c *Client) Recv() Response {
	c.t.Helper()
	body, err := framing.Read(c.br, nil, framing.MaxBody)
	require.NoError(c.t, err)
	var r Response
	require.NoError(c.t, json.Unmarshal(body, &r), "body %s", body)
	require.Equal(c.t, "2.0", r.JSONRPC, "body %s", body)
	return r
}

// Call sends one request and returns its response, checking that the
// string id came back as it was sent.
func (c *Client) Call(id, method, params string) Response {
	c.t.Helper()
	c.Send(Request(id, method, params))
	r := c.Recv()
	require.JSONEq(c.t, fmt.Sprintf("%q", id), string(r.ID))
	return r
}

// CheckServer runs the round trips every comparison server must pass:
// Initialize and _Keepalive answered with {}, string ids echoed, and a
// pipelined burst answered in full. echo says whether Echo returns its
// params (the ceiling answers {} to every method).
func CheckServer(t *testing.T, addr string, echo bool) {
	c := Dial(t, addr)
	require.JSONEq(t, `{}`, string(c.Call("pt-1", "Initialize", `{"protocol_version":"1.0"}`).Result))
	require.JSONEq(t, `{}`, string(c.Call("pt-2", "_Keepalive", `{}`).Result))
	want := `{}`
	if echo {
		want = `{"amount":123,"currency":"EUR"}`
	}
	require.JSONEq(t, want, string(c.Call("pt-3", "Echo", `{"amount":123,"currency":"EUR"}`).Result))
	const burst = 200
	bodies := make([][]byte, burst)
	for i := range bodies {
		bodies[i] = Request(fmt.Sprintf("pt-%d", 100+i), "_Keepalive", `{"pad":"xxxxxxxx"}`)
	}
	c.Send(bodies...)
	seen := make(map[string]bool)
	for range burst {
		r := c.Recv()
		var id string
		require.NoError(t, json.Unmarshal(r.ID, &id), "id %s must be a string", r.ID)
		seen[id] = true
	}
	require.Len(t, seen, burst)
}

// Serve runs a server on a loopback listener for the rest of the test and
// returns its address. When the test ends the context is canceled and the
// listener closed, and the server must then return without error.
func Serve(t *testing.T, run func(ctx context.Context, ln net.Listener) error) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		_ = ln.Close()
		require.NoError(t, <-done)
	})
	return ln.Addr().String()
}
