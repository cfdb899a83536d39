package dispatch

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/internal/testpki"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

const (
	tokenAgent   = "sgt_agent-token-for-tests"
	tokenLimited = "sgt_limited-token-for-tests"
	tokenRevoked = "sgt_revoked-token-for-tests"
)

func authFile(revoked bool) string {
	third := "      - " + auth.HashToken(tokenRevoked) + "\n"
	if revoked {
		third = ""
	}
	return `identities:
  - name: agent-runtime
    class: agent
    tokens:
      - ` + auth.HashToken(tokenAgent) + `
` + third + `    methods: ["*"]
    namespaces: [acme]
  - name: dashboard
    class: dashboard
    tokens:
      - ` + auth.HashToken(tokenLimited) + `
    methods: [list_skills]
    namespaces: ["*"]
    limits: {requests_per_second: 1, burst: 2}
  - name: pos-device
    class: device
    certificates:
      - common_name: device-42
    methods: [list_skills, describe_skill]
    namespaces: ["*"]
`
}

// fakeClock is a clock for the limiter that only moves when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

type authEnv struct {
	*env
	store *auth.Store
	path  string
	ca    *testpki.CA
}

func newAuthEnv(t *testing.T) *authEnv {
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(authFile(false)), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
		o.Authn = store
		o.Limiter = auth.NewLimiter((&fakeClock{now: time.Unix(1000, 0)}).Now)
	})
	return &authEnv{env: e, store: store, path: path, ca: testpki.NewCA("auth test CA")}
}

// dialTLS connects a client to the dispatcher over mutual TLS.
func (a *authEnv) dialTLS(cert *tls.Certificate, roots *testpki.CA) (*session.Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(a.t, err)
	cfg := session.DefaultConfig()
	cfg.Metrics = a.metrics
	srv, err := newFramedServer(cfg, a.d)
	require.NoError(a.t, err)
	go func() { _ = srv.Serve(tls.NewListener(ln, testpki.ServerConfig(a.ca.Server(), a.ca.Pool())), "tls") }()
	a.t.Cleanup(func() { _ = srv.Close() })
	ccfg := session.ClientConfig()
	ccfg.Metrics = a.metrics
	c, err := session.Dial(a.t.Context(), ln.Addr().String(), testpki.ClientConfig(roots.Pool(), cert), ccfg, nil)
	if err == nil {
		a.t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

func initialize(c *session.Conn, token string) error {
	p := map[string]any{"protocol_version": "1.0"}
	if token != "" {
		p["token"] = token
	}
	_, err := c.Call(context.Background(), MethodInitialize, p)
	return err
}

func stringCode(err error) string {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.EffectiveCode()
	}
	if err == nil {
		return ""
	}
	return "not a wire error: " + err.Error()
}

// postAuth calls as POST /rpc does with an Authorization header (none
// when empty) and answers the error's string code ("" on success).
func postAuth(t *testing.T, e *env, authorization, method, params string) string {
	_, err := e.httpFront(authorization).call(method, params)
	if err == nil {
		return ""
	}
	return err.EffectiveCode()
}

func TestAuthMatrixFramed(t *testing.T) {
	a := newAuthEnv(t)
	cases := map[string]struct {
		token string
		want  string
	}{
		"no token":   {"", StringAuthRequired},
		"bad token":  {"sgt_nope", StringAuthRequired},
		"good token": {tokenAgent, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := a.framedRaw()
			assert.Equal(t, tc.want, stringCode(initialize(c, tc.token)))
			_, err := c.Call(t.Context(), "list_skills", nil)
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.Equal(t, transport.StringMethodNotFound, stringCode(err), "uninitialized connections get no methods")
			}
		})
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(a.metrics.AuthFailures.WithLabelValues("framed", "missing")))
	assert.Equal(t, 1.0, testutil.ToFloat64(a.metrics.AuthFailures.WithLabelValues("framed", "invalid")))
}

func TestAuthMatrixHTTP(t *testing.T) {
	a := newAuthEnv(t)
	for name, tc := range map[string]struct {
		header, want string
	}{
		"no token":     {"", StringAuthRequired},
		"bad token":    {"Bearer sgt_nope", StringAuthRequired},
		"basic scheme": {"Basic dXNlcjpwdw==", StringAuthRequired},
		"good token":   {"Bearer " + tokenAgent, ""},
		"lowercase":    {"bearer " + tokenAgent, ""},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, postAuth(t, a.env, tc.header, "list_skills", `{}`))
		})
	}
}

// A token removed from the auth file stops working at once: on new
// connections, on open ones at their next call, and over HTTP.
func TestRevokedTokenAfterReload(t *testing.T) {
	a := newAuthEnv(t)
	open := a.framedRaw()
	require.NoError(t, initialize(open, tokenRevoked))
	_, err := open.Call(t.Context(), "list_skills", nil)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(a.path, []byte(authFile(true)), 0o600))
	require.NoError(t, a.store.Reload())

	_, err = open.Call(t.Context(), "list_skills", nil)
	assert.Equal(t, StringAuthRequired, stringCode(err))
	assert.Equal(t, StringAuthRequired, stringCode(initialize(a.framedRaw(), tokenRevoked)))
	assert.Equal(t, StringAuthRequired, postAuth(t, a.env, "Bearer "+tokenRevoked, "list_skills", `{}`))
	assert.Empty(t, postAuth(t, a.env, "Bearer "+tokenAgent, "list_skills", `{}`), "other tokens keep working")
	assert.Positive(t, testutil.ToFloat64(a.metrics.AuthFailures.WithLabelValues("framed", "revoked")))
}

func TestMutualTLSIdentity(t *testing.T) {
	a := newAuthEnv(t)
	device := a.ca.Client("device-42")
	c, err := a.dialTLS(&device, a.ca)
	require.NoError(t, err)
	require.NoError(t, initialize(c, ""), "a verified certificate is enough")
	_, err = c.Call(t.Context(), "describe_skill", map[string]string{"name": "acme.math.add"})
	assert.NoError(t, err)
	_, err = c.Call(t.Context(), "read_skill_file", map[string]string{"name": "acme.math.add", "path": "SKILL.md"})
	assert.Equal(t, StringPermissionDenied, stringCode(err), "method not in the device's policy")

	stranger := a.ca.Client("someone-else")
	c, err = a.dialTLS(&stranger, a.ca)
	require.NoError(t, err)
	assert.Equal(t, StringAuthRequired, stringCode(initialize(c, "")))

	intruder := testpki.NewCA("other CA").Client("device-42")
	for name, cert := range map[string]*tls.Certificate{"no client certificate": nil, "another CA": &intruder} {
		c, err = a.dialTLS(cert, a.ca)
		if err == nil { // TLS 1.3 reports the server's refusal on first use
			err = initialize(c, "")
		}
		assert.Error(t, err, name)
	}
}

// Skills outside an identity's namespaces are invisible: left out of
// list_skills, and PERMISSION_DENIED whether they exist or not.
func TestNamespaceFiltering(t *testing.T) {
	a := newAuthEnv(t)
	c := a.framedRaw()
	require.NoError(t, initialize(c, tokenAgent))
	for _, limit := range []int{1, 2, 50} {
		var names []string
		params := map[string]any{"limit": limit}
		for range 20 {
			res, err := c.Call(t.Context(), "list_skills", params)
			require.NoError(t, err)
			var page ListSkillsResult
			require.NoError(t, json.Unmarshal(res, &page))
			for _, s := range page.Skills {
				names = append(names, s.Name)
			}
			if page.NextCursor == nil {
				break
			}
			params["cursor"] = *page.NextCursor
		}
		assert.Equal(t, []string{"acme.math.add", "acme.style.guide", "acme.text.wordcount", "skills.protocol.guide"}, names, "limit %d", limit)
	}
	for _, name := range []string{"pdf-tips", "zzz.does.notexist"} {
		_, err := c.Call(t.Context(), "describe_skill", map[string]string{"name": name})
		assert.Equal(t, StringPermissionDenied, stringCode(err), name)
		_, err = c.Call(t.Context(), "read_skill_file", map[string]string{"name": name, "path": "SKILL.md"})
		assert.Equal(t, StringPermissionDenied, stringCode(err), name)
	}
	_, err := c.Call(t.Context(), "load_skills_protocol_guide", nil)
	assert.NoError(t, err)
	assert.Positive(t, testutil.ToFloat64(a.metrics.AuthFailures.WithLabelValues("framed", "namespace_denied")))
}

func TestRateLimited(t *testing.T) {
	for _, front := range []string{"framed", "http"} {
		t.Run(front, func(t *testing.T) {
			a := newAuthEnv(t)
			call := func() string {
				return postAuth(t, a.env, "Bearer "+tokenLimited, "list_skills", `{}`)
			}
			if front == "framed" {
				c := a.framedRaw()
				require.NoError(t, initialize(c, tokenLimited))
				call = func() string {
					_, err := c.Call(t.Context(), "list_skills", nil)
					var te *transport.Error
					if errors.As(err, &te) && te.EffectiveCode() == StringRateLimited {
						require.NotNil(t, te.Retry, "RATE_LIMITED carries a retry hint")
						assert.Positive(t, te.Retry.SuggestedDelayMS)
					}
					return stringCode(err)
				}
			}
			assert.Empty(t, call())
			assert.Empty(t, call())
			assert.Equal(t, StringRateLimited, call(), "the burst of 2 is used up")
			assert.Equal(t, 1.0, testutil.ToFloat64(a.metrics.RateLimited.WithLabelValues(front, "dashboard")))
		})
	}
}

func TestAnonymousSeesEverything(t *testing.T) {
	e := newEnv(t, examplesDir())
	res, err := e.framed().Call(t.Context(), "list_skills", nil)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(res), "pdf-tips"))
}

// Per-identity connection caps: past max_connections, Initialize answers
// RATE_LIMITED; a slot frees when a connection closes.
func TestPerIdentityConnectionCap(t *testing.T) {
	e := connCapEnv(t, 1)
	first := e.framedRaw()
	require.NoError(t, initialize(first, tokenAgent))
	second := e.framedRaw()
	assert.Equal(t, StringRateLimited, stringCode(initialize(second, tokenAgent)))
	require.NoError(t, first.Close())
	require.Eventually(t, func() bool {
		return initialize(e.framedRaw(), tokenAgent) == nil
	}, 5*time.Second, 20*time.Millisecond, "the slot frees when the first connection closes")
}
