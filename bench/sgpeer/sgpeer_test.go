package sgpeer

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/bench/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serve(t *testing.T, async bool) string {
	return wiretest.Serve(t, func(ctx context.Context, ln net.Listener) error { return Serve(ctx, ln, async) })
}

func TestRoundTrip(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync", true: "async"}[async], func(t *testing.T) {
			wiretest.CheckServer(t, serve(t, async), true)
		})
	}
}

func TestUnknownMethod(t *testing.T) {
	c := wiretest.Dial(t, serve(t, false))
	r := c.Call("pt-1", "list_skills", `{"limit":1}`)
	assert.Contains(t, string(r.Error), "-32601")
}

func TestCodec(t *testing.T) {
	var wire bytes.Buffer
	require.NoError(t, Codec{}.WriteObject(&wire, map[string]int{"a": 1}))
	assert.Equal(t, "00000007:{\"a\":1}\n", wire.String())
	var got map[string]int
	require.NoError(t, Codec{}.ReadObject(bufio.NewReader(&wire), &got))
	assert.Equal(t, map[string]int{"a": 1}, got)
	require.Error(t, Codec{}.ReadObject(bufio.NewReader(bytes.NewReader([]byte("00000002:x}\n"))), &got))
}
