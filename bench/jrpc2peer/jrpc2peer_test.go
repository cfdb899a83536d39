package jrpc2peer

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/bench/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serve(t *testing.T) string {
	return wiretest.Serve(t, func(ctx context.Context, ln net.Listener) error { return Serve(ctx, ln, 0) })
}

func TestRoundTrip(t *testing.T) {
	wiretest.CheckServer(t, serve(t), true)
}

func TestUnknownMethod(t *testing.T) {
	c := wiretest.Dial(t, serve(t))
	r := c.Call("pt-1", "list_skills", `{"limit":1}`)
	assert.Contains(t, string(r.Error), "-32601")
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestChannel(t *testing.T) {
	var wire bytes.Buffer
	ch := Framing(&wire, nopCloser{&wire})
	require.NoError(t, ch.Send([]byte(`{"a":1}`)))
	require.NoError(t, ch.Send([]byte(`{}`)))
	assert.Equal(t, "00000007:{\"a\":1}\n00000002:{}\n", wire.String())
	for _, want := range []string{`{"a":1}`, `{}`} {
		got, err := ch.Recv()
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	_, err := ch.Recv()
	assert.Equal(t, io.EOF, err)
}
