package framedfront

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/fsnotify/fsnotify.(*inotify).readEvents"))
}

// serve starts the framed front door of an open gateway with no skills
// and returns a client connection that has not initialized.
func serve(t *testing.T) *session.Conn {
	t.Helper()
	cfg := session.DefaultConfig()
	Configure(&cfg)
	return dial(t, cfg, New(openDispatcher(t)))
}

// openDispatcher is an open gateway's dispatcher with no skills but the
// built-in guide.
func openDispatcher(t *testing.T) *dispatch.Dispatcher {
	t.Helper()
	reg, err := skills.NewRegistry(skills.Options{Dir: t.TempDir(), Logger: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close() })
	blobs := blob.NewMemStore(blob.MemOptions{})
	t.Cleanup(func() { _ = blobs.Close() })
	return dispatch.New(dispatch.Options{Logger: zerolog.Nop(), Skills: reg, Blobs: blobs})
}

// dial serves h on a loopback listener configured by cfg and returns a
// client connection to it.
func dial(t *testing.T, cfg session.Config, h session.Handler) *session.Conn {
	t.Helper()
	srv, err := session.NewServer(cfg, h)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln, "tcp") }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := session.Dial(ctx, ln.Addr().String(), nil, session.ClientConfig(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func call(t *testing.T, c *session.Conn, method, params string) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Call(ctx, method, json.RawMessage(params))
}

// Initialize establishes who the connection is; the methods it lists are
// then served on that connection, as that identity.
func TestInitializeEstablishesTheConnection(t *testing.T) {
	c := serve(t)
	res, err := call(t, c, "Initialize", `{"protocol_version":"1.0","client":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	var ir dispatch.InitializeResult
	require.NoError(t, json.Unmarshal(res, &ir))
	assert.Equal(t, "anonymous", ir.Identity)
	assert.Contains(t, ir.Methods, "list_skills")
	assert.NotContains(t, ir.Methods, "Initialize")

	res, err = call(t, c, "list_skills", `{}`)
	require.NoError(t, err)
	assert.Contains(t, string(res), `"name":"skills.protocol.guide"`, "the built-in guide")
}

// 001: a number outside its accepted range is a parse error, which ends
// the framed connection with that _CloseReason (HTTP answers -32602).
func TestNumberOutOfRangeAbortsTheConnection(t *testing.T) {
	c := serve(t)
	_, err := call(t, c, "Initialize", `{"protocol_version":"1.0"}`)
	require.NoError(t, err)
	_, err = call(t, c, "list_skills", `{"limit":0}`)
	var te *transport.Error
	require.True(t, errors.As(err, &te) || errors.Is(err, session.ErrClosed), "%v", err)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the connection must end")
	}
	reason := c.PeerCloseReason()
	require.NotNil(t, reason)
	assert.EqualValues(t, transport.CodeParseError, reason.Code)
	assert.Contains(t, reason.Details, `parameter "limit" must be between 1 and 2147483647, not 0`)
}

// A background run keeps a detached caller: the connection to describe
// it by, not the request, which is recycled.
func TestDetachKeepsTheConnectionOnly(t *testing.T) {
	c := &caller{conn: &session.Conn{}, req: &session.Request{}}
	d, ok := c.Detach().(*caller)
	require.True(t, ok)
	assert.Same(t, c.conn, d.conn)
	assert.Nil(t, d.req)
	assert.Empty(t, d.RequestID())
	assert.Empty(t, c.NoStream(), "a framed connection always takes notifications")
}
