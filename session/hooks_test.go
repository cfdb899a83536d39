package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skillgate/skillgate/internal/testlog"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// binderHandler binds a state to every connection and records what the
// handler sees of it.
type binderHandler struct {
	*testHandler
	mu     sync.Mutex
	states []*recordedState
}

type recordedState struct {
	conn   *Conn
	closed chan struct{}
}

func (s *recordedState) Closed() { close(s.closed) }

func (h *binderHandler) Bind(c *Conn) ConnState {
	s := &recordedState{conn: c, closed: make(chan struct{})}
	h.mu.Lock()
	h.states = append(h.states, s)
	h.mu.Unlock()
	return s
}

func (h *binderHandler) Handle(ctx context.Context, req *Request) (any, error) {
	if req.Method == "Whoami" {
		c := req.Conn
		st, _ := c.State().(*recordedState)
		return map[string]any{
			"id": c.ID(), "listener": c.Listener(), "remote": c.RemoteAddr(),
			"tls": c.TLSState() != nil, "bound": st != nil && st.conn == c,
		}, nil
	}
	return h.testHandler.Handle(ctx, req)
}

// A Binder's state is bound before the first request, is what State
// returns to the handler, and is told when the connection closes; the
// accessors describe the connection.
func TestBinderStateAndAccessors(t *testing.T) {
	for _, kind := range []string{"pipe", "tls"} {
		t.Run(kind, func(t *testing.T) {
			var h *binderHandler
			f := newFixtureWrapped(t, kind, func(th *testHandler) Handler {
				h = &binderHandler{testHandler: th}
				return h
			}, nil)
			p := f.dial()
			p.initialize()
			m := p.call("Whoami", `{}`)
			require.Nil(t, m.Error)
			assert.JSONEq(t, `{"id":1,"listener":"`+kind+`","remote":"`+p.nc.LocalAddr().String()+`","tls":`+
				map[string]string{"pipe": "false", "tls": "true"}[kind]+`,"bound":true}`, string(m.Result))
			h.mu.Lock()
			require.Len(t, h.states, 1)
			st := h.states[0]
			h.mu.Unlock()
			require.NoError(t, p.nc.Close())
			select {
			case <-st.closed:
			case <-time.After(30 * time.Second):
				t.Fatal("the bound state was not told of the close")
			}
		})
	}
}

// Notifications other than the transport's own go to OnNotification with
// their method and params; _Info without params and an _Error whose params
// carry no error object are logged without them.
func TestNotificationHookAndBareNotifications(t *testing.T) {
	logs := &testlog.Buffer{}
	type got struct{ method, params string }
	seen := make(chan got, 4)
	f := newFixture(t, "pipe", func(c *Config) {
		c.Logger = zerolog.New(logs).Level(zerolog.InfoLevel)
		c.OnNotification = func(_ *Conn, method string, params []byte) { seen <- got{method, string(params)} }
	})
	p := f.dial()
	p.send(`{"jsonrpc":"2.0","method":"progress","params":{"n":1}}`)
	p.send(`{"jsonrpc":"2.0","method":"_Info"}`)
	p.send(`{"jsonrpc":"2.0","method":"_Error"}`)
	p.send(`{"jsonrpc":"2.0","method":"_Error","params":{"error":"not an error object"}}`)
	require.Nil(t, p.call("_Keepalive", `{}`).Error)
	assert.Equal(t, got{"progress", `{"n":1}`}, <-seen)
	info, errs := peerNotificationLogs(t, logs)
	require.Len(t, info, 1)
	assert.NotContains(t, info[0], "params")
	assert.NotContains(t, info[0], "params_prefix")
	require.Len(t, errs, 2)
	for _, e := range errs {
		assert.Equal(t, "peer reported an error", e["message"])
		assert.NotContains(t, e, "string_code")
	}
	assert.NotContains(t, errs[0], "params")
}

// Close reasons name themselves in logs and metrics; a value past the
// known ones says so rather than panicking. A close's error names its
// reason and matches ErrClosed.
func TestCloseReasonNames(t *testing.T) {
	assert.Equal(t, "tls_handshake_failed", ReasonHandshake.String())
	assert.Equal(t, "unknown", (ReasonHandshake + 1).String())
	err := &CloseError{Reason: ReasonSlowReader}
	assert.Equal(t, "connection closed: slow_reader", err.Error())
	assert.ErrorIs(t, err, ErrClosed)
	a := &Abort{Err: transport.NewError(transport.CodeParseError, "Parse error.")}
	assert.Contains(t, a.Error(), "abort: ")
	assert.Contains(t, a.Error(), "Parse error.")
}
