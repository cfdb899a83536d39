package httpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/framedfront"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/fsnotify/fsnotify.(*inotify).readEvents"))
}

const testMaxMessage = 64 << 10

func examplesDir() string { return "../examples/skills" }

// env is a dispatcher over a skills folder ("": none) and an in-memory
// blob store, served by the HTTP front door and by the framed transport.
type env struct {
	t       *testing.T
	d       *dispatch.Dispatcher
	metrics *metrics.Metrics
	http    *httptest.Server
}

func newEnv(t *testing.T, skillsDir string) *env {
	return newEnvOpts(t, skillsDir, nil)
}

func newEnvOpts(t *testing.T, skillsDir string, mutate func(*dispatch.Options)) *env {
	t.Helper()
	e := &env{t: t, metrics: metrics.New("test")}
	reg, err := skills.NewRegistry(skills.Options{Dir: skillsDir, Logger: zerolog.Nop()})
	require.NoError(t, err)
	blobs := blob.NewMemStore(blob.MemOptions{MaxBlobSize: 256 << 10})
	opts := dispatch.Options{
		Info:    dispatch.Info{Name: "skillgate", Version: "test", MaxMessageSize: testMaxMessage},
		Logger:  zerolog.Nop(),
		Metrics: e.metrics,
		Skills:  reg,
		Blobs:   blobs,
	}
	if mutate != nil {
		mutate(&opts)
	}
	e.d = dispatch.New(opts)
	e.http = httptest.NewServer(New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage}))
	t.Cleanup(func() {
		e.http.Close()
		_ = reg.Close()
		_ = blobs.Close()
	})
	return e
}

// framed returns an initialized client connection to the dispatcher over
// a net.Pipe, to compare the HTTP front door with the framed transport.
func (e *env) framed() *session.Conn {
	e.t.Helper()
	cfg := session.DefaultConfig()
	framedfront.Configure(&cfg)
	cfg.MaxMessageSize = testMaxMessage
	cfg.Metrics = e.metrics
	srv, err := session.NewServer(cfg, framedfront.New(e.d))
	require.NoError(e.t, err)
	a, b := net.Pipe()
	srv.ServeConn(b, "pipe")
	ccfg := session.ClientConfig()
	ccfg.MaxMessageSize = testMaxMessage
	ccfg.Metrics = e.metrics
	c, err := session.NewClientConn(a, ccfg, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		_ = c.Close()
		_ = srv.Close()
	})
	_, err = c.Call(context.Background(), dispatch.MethodInitialize, map[string]any{"protocol_version": "1.0"})
	require.NoError(e.t, err)
	return c
}

// caller calls a method through one front door.
type caller interface {
	call(method string, params string) (json.RawMessage, *transport.Error)
	name() string
}

type framedCaller struct {
	t *testing.T
	c *session.Conn
}

func (f framedCaller) name() string { return "framed" }

func (f framedCaller) call(method, params string) (json.RawMessage, *transport.Error) {
	res, err := f.c.Call(context.Background(), method, json.RawMessage(params))
	var te *transport.Error
	if errors.As(err, &te) {
		return nil, te
	}
	require.NoError(f.t, err)
	return res, nil
}

type httpCaller struct {
	t   *testing.T
	url string
}

func (h httpCaller) name() string { return "http" }

func (h httpCaller) call(method, params string) (json.RawMessage, *transport.Error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":7}`, method, params)
	status, out := postRPC(h.t, h.url, body)
	require.Equal(h.t, http.StatusOK, status, "protocol errors are HTTP 200: %s", out)
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(h.t, json.Unmarshal(out, &resp))
	require.Equal(h.t, "7", string(resp.ID))
	if resp.Error != nil {
		te, err := transport.DecodeError(resp.Error)
		require.NoError(h.t, err)
		return nil, te
	}
	return resp.Result, nil
}

func postRPC(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url+"/rpc", "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// fronts returns a caller for each front door.
func (e *env) fronts() []caller {
	return []caller{framedCaller{e.t, e.framed()}, httpCaller{e.t, e.http.URL}}
}

// registerStuck registers the method "stuck", which ignores its context
// and returns only once release is called; each call sends on entered
// (room calls fit) when it has begun. Release before the test's servers
// close: closing one waits for its handlers.
func (e *env) registerStuck(room int) (entered <-chan struct{}, release func()) {
	begun := make(chan struct{}, room)
	done := make(chan struct{})
	e.d.Register("stuck", nil, func(context.Context, *dispatch.Call) (any, error) {
		begun <- struct{}{}
		<-done // ignores its context on purpose
		return map[string]any{}, nil
	})
	return begun, func() { close(done) }
}
