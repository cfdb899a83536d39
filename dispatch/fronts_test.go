package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillgate/skillgate/blob"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/fsnotify/fsnotify.(*inotify).readEvents"))
}

// env is a dispatcher over a temporary skills folder and an in-memory
// blob store, reachable through the framed transport and through Front
// (the entry of POST /rpc, whose own tests are httpfront's).
type env struct {
	t       *testing.T
	d       *Dispatcher
	metrics *metrics.Metrics
	reg     *skills.Registry
	blobs   blob.Store
}

const testMaxMessage = 64 << 10

func newEnv(t *testing.T, skillsDir string) *env { return newEnvWith(t, skillsDir, 256<<10) }

func newEnvWith(t *testing.T, skillsDir string, maxBlob int64) *env {
	return newEnvOpts(t, skillsDir, maxBlob, nil)
}

func newEnvOpts(t *testing.T, skillsDir string, maxBlob int64, mutate func(*Options)) *env {
	t.Helper()
	e := &env{t: t, metrics: metrics.New("test")}
	reg, err := skills.NewRegistry(skills.Options{Dir: skillsDir, Logger: zerolog.Nop()})
	require.NoError(t, err)
	e.reg = reg
	e.blobs = blob.NewMemStore(blob.MemOptions{MaxBlobSize: maxBlob})
	opts := Options{
		Info:    Info{Name: "skillgate", Version: "test", MaxMessageSize: testMaxMessage},
		Logger:  zerolog.Nop(),
		Metrics: e.metrics,
		Skills:  reg,
		Blobs:   e.blobs,
	}
	if mutate != nil {
		mutate(&opts)
	}
	e.d = New(opts)
	t.Cleanup(func() {
		_ = reg.Close()
		_ = e.blobs.Close()
	})
	return e
}

// framed returns an initialized client connection to the dispatcher over a
// net.Pipe.
func (e *env) framed() *session.Conn {
	e.t.Helper()
	c := e.framedRaw()
	_, err := c.Call(context.Background(), MethodInitialize, map[string]any{"protocol_version": "1.0"})
	require.NoError(e.t, err)
	return c
}

// framedRaw returns a client connection that has not initialized.
func (e *env) framedRaw() *session.Conn {
	e.t.Helper()
	return e.framedRawWith(nil)
}

// framedRawWith is framedRaw with a client configuration that client
// (when not nil) adjusts.
func (e *env) framedRawWith(client func(*session.Config)) *session.Conn {
	e.t.Helper()
	cfg := session.DefaultConfig()
	cfg.MaxMessageSize = testMaxMessage
	cfg.Metrics = e.metrics
	srv, err := newFramedServer(cfg, e.d)
	require.NoError(e.t, err)
	a, b := net.Pipe()
	srv.ServeConn(b, "pipe")
	ccfg := session.ClientConfig()
	ccfg.MaxMessageSize = testMaxMessage
	ccfg.Metrics = e.metrics
	if client != nil {
		client(&ccfg)
	}
	c, err := session.NewClientConn(a, ccfg, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		_ = c.Close()
		_ = srv.Close()
	})
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

// redialCaller is a framed caller that survives an abort: a call that
// the gateway answers by aborting the connection (a number outside a
// parameter's range is a parse error there) returns the _CloseReason's
// error, and the next call goes over a fresh connection from dial.
type redialCaller struct {
	t    *testing.T
	c    *session.Conn
	dial func() *session.Conn
}

func (e *env) redialing(dial func() *session.Conn) *redialCaller {
	return &redialCaller{t: e.t, c: dial(), dial: dial}
}

func (r *redialCaller) name() string { return "framed" }

func (r *redialCaller) call(method, params string) (json.RawMessage, *transport.Error) {
	res, err := r.c.Call(context.Background(), method, json.RawMessage(params))
	if errors.Is(err, session.ErrClosed) {
		if cause := r.c.PeerCloseReason(); cause != nil {
			r.c = r.dial()
			return nil, cause
		}
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return nil, te
	}
	require.NoError(r.t, err)
	return res, nil
}

// httpCaller calls as POST /rpc does: through Front under the "http"
// label, with the credentials of a request carrying authorization (no
// Authorization header when empty).
type httpCaller struct {
	t             *testing.T
	f             *Front
	authorization string
}

func (e *env) httpFront(authorization string) httpCaller {
	return httpCaller{e.t, e.d.Front(metrics.FrontHTTP), authorization}
}

func (h httpCaller) name() string { return "http" }

func (h httpCaller) call(method, params string) (json.RawMessage, *transport.Error) {
	r := httptest.NewRequest(http.MethodPost, "/rpc", nil)
	if h.authorization != "" {
		r.Header.Set("Authorization", h.authorization)
	}
	id, err := h.f.Credentials(r)
	return h.f.Serve(h.t.Context(), &Request{Method: method, Params: json.RawMessage(params), Identity: id, AuthErr: err, Remote: "test", ID: "7"})
}

// fronts returns a caller for each front door.
func (e *env) fronts() []caller {
	return []caller{e.redialing(e.framed), e.httpFront("")}
}

// writeSkill writes a minimal valid skill package.
func writeSkill(t *testing.T, root, name, version string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, name+"-"+version)
	all := map[string]string{
		"skill.toml": fmt.Sprintf("name = %q\nversion = %q\ndescription = \"Test skill %s.\"\nkind = \"action\"\n"+
			"[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n", name, version, name),
		"SKILL.md":     "---\nname: " + name + "\nshort_description: A test skill.\n---\n# " + name + "\n\nUse it.\n",
		"code/main.py": "def main(args):\n    return {\"ok\": True}\n",
	}
	for k, v := range files {
		all[k] = v
	}
	for p, content := range all {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}
