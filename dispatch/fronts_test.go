package dispatch

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
// blob store, reachable through both front doors.
type env struct {
	t       *testing.T
	d       *Dispatcher
	metrics *metrics.Metrics
	reg     *skills.Registry
	blobs   blob.Store
	http    *httptest.Server
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
	e.http = httptest.NewServer(e.d.HTTPHandler(HTTPOptions{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage}))
	t.Cleanup(func() {
		e.http.Close()
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
	cfg := session.DefaultConfig()
	ConfigureSession(&cfg)
	cfg.MaxMessageSize = testMaxMessage
	cfg.Metrics = e.metrics
	srv, err := session.NewServer(cfg, e.d)
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
