package mcpfront

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/httpfront"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/skills"
)

// gateway is a dispatcher and its MCP server, mounted at /mcp behind the
// HTTP front door as `skillgate serve` mounts it, with the options the
// tests of resources, visibility and catalog reloads need.
type gateway struct {
	d        *dispatch.Dispatcher
	reg      *skills.Registry
	blobs    *blob.MemStore
	srv      *Server
	url      string
	store    *auth.Store // nil for an open gateway; its reloads close the sessions of removed credentials
	authPath string
}

type gatewayOptions struct {
	skillsDir     string
	mcp           Options
	authFile      string // "": an open gateway (anonymous identity)
	maxMessage    int    // 0: 1 MiB
	maxSkillBytes int64
	runner        dispatch.Runner // nil: cannedRunner
	http          HTTPOptions     // Authenticate defaults to the front's
}

func newGateway(t *testing.T, o gatewayOptions) *gateway {
	t.Helper()
	reg, err := skills.NewRegistry(skills.Options{Dir: o.skillsDir, Logger: zerolog.Nop(), MaxSkillBytes: o.maxSkillBytes})
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close() })
	blobs := blob.NewMemStore(blob.MemOptions{})
	t.Cleanup(func() { _ = blobs.Close() })
	if o.maxMessage == 0 {
		o.maxMessage = 1 << 20
	}
	if o.runner == nil {
		o.runner = cannedRunner{}
	}
	limiter := auth.NewLimiter(time.Now)
	dopts := dispatch.Options{Logger: zerolog.Nop(), Skills: reg, Blobs: blobs, Runner: o.runner,
		Info: dispatch.Info{MaxMessageSize: o.maxMessage}, Limiter: limiter}
	var store *auth.Store
	path := ""
	if o.authFile != "" {
		path = filepath.Join(t.TempDir(), "auth.yaml")
		require.NoError(t, os.WriteFile(path, []byte(o.authFile), 0o600))
		var err error
		store, err = auth.Load(path, auth.Options{Logger: zerolog.Nop()})
		require.NoError(t, err)
		dopts.Authn = store
	}
	d := dispatch.New(dopts)
	opts := o.mcp
	opts.Front, opts.Skills, opts.Limiter = d.Front(metrics.FrontMCP), reg, limiter
	srv, err := New(opts)
	require.NoError(t, err)
	hopts := o.http
	if hopts.Authenticate == nil {
		hopts.Authenticate = opts.Front.AuthenticateRequest
	}
	if hopts.MaxBodyBytes == 0 {
		hopts.MaxBodyBytes = 1 << 20
	}
	front := httpfront.New(d.Front(metrics.FrontHTTP), httpfront.Options{MaxBodyBytes: 1 << 20, MaxResponseBytes: o.maxMessage})
	front.Handle("/mcp", srv.HTTPHandler(hopts))
	hs := httptest.NewServer(front)
	t.Cleanup(hs.Close)
	g := &gateway{d: d, reg: reg, blobs: blobs, srv: srv, url: hs.URL + "/mcp", store: store, authPath: path}
	t.Cleanup(g.closeSessions) // raw sessions no client closes; before hs.Close
	return g
}

// bearer adds "Authorization: Bearer <token>" to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// client connects an SDK client over Streamable HTTP, with token ("": none).
func (g *gateway) client(t *testing.T, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := g.connect(t, token, opts)
	require.NoError(t, err)
	return cs
}

func (g *gateway) connect(t *testing.T, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{}
	if token != "" {
		hc.Transport = bearer{token: token, next: http.DefaultTransport}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// inMemory connects an SDK client to the server over the SDK's in-memory
// transport, as `skillgate mcp` serves one local client: no HTTP, the
// session's identity is Options.Identity.
func (g *gateway) inMemory(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.srv.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// skillFiles writes a skill package: path -> content, under dir/folder.
func skillFiles(t *testing.T, dir, folder string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, folder, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

// actionSkill is the skill.toml and SKILL.md of an action skill.
func actionSkill(name, version, description, short string, extraRuntime string) map[string]string {
	return map[string]string{
		"skill.toml": "name = \"" + name + "\"\nversion = \"" + version + "\"\ndescription = \"" + description + "\"\n" +
			"kind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n" + extraRuntime,
		"SKILL.md":     "---\nname: T\nshort_description: " + short + "\n---\nBody.\n",
		"code/main.py": "def main(args):\n    return {}\n",
	}
}

// instructionSkill is an instruction skill whose SKILL.md body is body.
func instructionSkill(name, version, description, body string) map[string]string {
	return map[string]string{
		"skill.toml": "name = \"" + name + "\"\nversion = \"" + version + "\"\ndescription = \"" + description + "\"\nkind = \"instruction\"\n",
		"SKILL.md":   "---\nname: Guide\nshort_description: A guide.\n---\n" + body,
	}
}

// echoRunner completes every run with its args and the ids of its input
// blobs as output, so that a test sees what the run was given.
type echoRunner struct{}

func (echoRunner) Run(_ context.Context, job sandbox.Job) (*sandbox.Result, error) {
	ids := []string{}
	for _, b := range job.InputBlobs {
		ids = append(ids, b.ID)
	}
	args := job.Args
	if len(args) == 0 {
		args = json.RawMessage(`"<empty>"`)
	}
	out, err := json.Marshal(map[string]any{"args": args, "blobs": ids})
	if err != nil {
		return nil, err
	}
	return &sandbox.Result{Status: sandbox.StatusCompleted, Output: out}, nil
}
