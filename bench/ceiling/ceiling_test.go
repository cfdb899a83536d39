package ceiling

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/bench/framing"
	"github.com/skillgate/skillgate/bench/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serve(t *testing.T) string {
	return wiretest.Serve(t, func(_ context.Context, ln net.Listener) error { return Serve(ln) })
}

func TestRoundTrip(t *testing.T) {
	wiretest.CheckServer(t, serve(t), false)
}

func TestNotificationNotAnswered(t *testing.T) {
	c := wiretest.Dial(t, serve(t))
	c.Send([]byte(`{"jsonrpc":"2.0","method":"_Info","params":{}}`), wiretest.Request("pt-9", "_Keepalive", `{}`))
	assert.JSONEq(t, `"pt-9"`, string(c.Recv().ID))
}

func TestAppendResult(t *testing.T) {
	got := appendResult(nil, []byte(`"pt-1"`))
	assert.Equal(t, "00000029:{\"jsonrpc\":\"2.0\",\"id\":\"pt-1\",\"result\":{}}\n", string(got))
}

func BenchmarkServeConn(b *testing.B) {
	b.ReportAllocs()
	client, server := net.Pipe()
	go ServeConn(server)
	defer client.Close()
	req := wiretest.Request("pt-1", "_Keepalive", `{}`)
	wire := framing.Append(nil, req)
	buf := make([]byte, 64)
	for b.Loop() {
		if _, err := client.Write(wire); err != nil {
			b.Fatal(err)
		}
		if _, err := client.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}
