package session

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// clientBubble opens a client Conn on a net.Pipe inside the caller's
// synctest bubble; the returned peer plays the server.
func clientBubble(t *testing.T) (*Conn, *peer, *metrics.Metrics) {
	t.Helper()
	a, b := net.Pipe()
	cfg := ClientConfig()
	cfg.MaxMessageSize = 16 << 10
	cfg.Metrics = metrics.New("test")
	c, err := NewClientConn(a, cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, &peer{t: t, nc: b, fr: transport.NewReader(b, 1<<20), bubbled: true}, cfg.Metrics
}

// callAsync runs Call on its own goroutine.
func callAsync(ctx context.Context, c *Conn, method string, params any) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, method, params)
		done <- err
	}()
	return done
}

// Call's refusals before anything is sent: params that are no JSON
// object, and a request larger than the message size limit.
func TestCallRefusesBadRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, _ := clientBubble(t)
		_, err := c.Call(t.Context(), "Echo", []int{1, 2})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "object")
		_, err = c.Call(t.Context(), "Echo", map[string]string{"pad": string(make([]byte, 16<<10))})
		require.Error(t, err)
		assert.Equal(t, "call: request does not fit the message size limit", err.Error())
	})
}

// A call whose context ends gives the context's error, and the response
// that comes later is no longer awaited: the client tells the peer so
// with an UNEXPECTED_RESPONSE _Error.
func TestCallCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, server, _ := clientBubble(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := callAsync(ctx, c, "Slow", nil)
		m := server.recv()
		require.Equal(t, "Slow", m.Method)
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		server.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
		m2 := server.recv()
		assert.Equal(t, transport.MethodError, m2.Method)
		assert.Contains(t, string(m2.Params), transport.StringUnexpectedResponse)
		assert.Contains(t, string(m2.Params), `"`+*m.ID+`"`)
	})
}

// A call waiting when the connection closes fails with the close's error,
// and so does every call made afterwards.
func TestCallFailsWhenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, server, _ := clientBubble(t)
		done := callAsync(t.Context(), c, "Slow", nil)
		require.Equal(t, "Slow", server.recv().Method)
		require.NoError(t, server.nc.Close())
		err := <-done
		require.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, "connection closed: peer_closed", err.Error())
		<-c.Done()
		_, err = c.Call(t.Context(), "Echo", nil)
		assert.ErrorIs(t, err, ErrClosed)
	})
}

// A peer that answers our _Keepalive with an error has still answered:
// the probe counts as answered (its round trip is observed) and the
// connection lives on.
func TestKeepaliveAnsweredWithError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, server, mt := clientBubble(t)
		m := server.recv()
		require.Equal(t, transport.MethodKeepalive, m.Method)
		time.Sleep(time.Second)
		server.send(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found.","data":{"string_code":"JSONRPC_METHOD_NOT_FOUND"}},"id":"` + *m.ID + `"}`)
		synctest.Wait()
		var dm dto.Metric
		require.NoError(t, mt.KeepaliveRTT.(prometheus.Metric).Write(&dm))
		assert.Equal(t, uint64(1), dm.GetHistogram().GetSampleCount())
		assert.Equal(t, 1.0, dm.GetHistogram().GetSampleSum(), "the round trip in seconds")
		assert.Equal(t, ReasonNone, c.Reason())
		// The next probe follows one interval later; answered, nothing else.
		m = server.recv()
		require.Equal(t, transport.MethodKeepalive, m.Method)
		assert.Equal(t, "cl-2", *m.ID)
		assert.False(t, errors.Is(c.Err(), ErrClosed))
	})
}
