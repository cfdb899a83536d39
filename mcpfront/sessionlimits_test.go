package mcpfront

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
)

const tokenTwo = "sgt_mcp-sessions-two"

// twoConnsAuth is an identity that may hold two connections, with a rate
// no test here exhausts unless it means to.
func twoConnsAuth(rate string) string {
	return "identities:\n  - name: two\n    class: agent\n    tokens: [" + auth.HashToken(tokenTwo) + "]\n" +
		"    methods: [\"*\"]\n    namespaces: [\"*\"]\n    limits: {max_connections: 2" + rate + "}\n"
}

// eventually waits, up to a generous deadline, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 20 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goroutinesBackTo waits until the process runs no more goroutines than
// base (plus a few of the HTTP client's idle connections, closed first).
func goroutinesBackTo(t *testing.T, base int) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	eventually(t, "goroutines back to the baseline", func() bool {
		http.DefaultClient.CloseIdleConnections()
		return runtime.NumGoroutine() <= base+2
	})
}

// rawSession opens a session with raw HTTP (initialize, then
// notifications/initialized) and returns its id.
func rawSession(t *testing.T, url, token string) string {
	t.Helper()
	resp, body := postMCP(t, url, token, initializeBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	require.NoError(t, err)
	mcpHeaders(req, token, sid)
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = r.Body.Close()
	require.Less(t, r.StatusCode, 300)
	return sid
}

func mcpHeaders(req *http.Request, token, sid string) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("Mcp-Session-Id", sid)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// openGET opens the session's server-to-client SSE stream and returns a
// channel closed when the stream ends.
func openGET(t *testing.T, url, token, sid string) <-chan struct{} {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	mcpHeaders(req, token, sid)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
		}
	}()
	return ended
}

// An identity limited to two connections holds at most two MCP sessions:
// the third is refused 429 with a JSON-RPC error of the protocol's shape
// (RATE_LIMITED, the request's id, a retry hint), by raw HTTP and through
// the SDK client, and a session that ends gives its connection back.
// Once every session is gone, so are their goroutines.
func TestSessionsCountAgainstConnectionLimit(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), authFile: twoConnsAuth("")})
	base := runtime.NumGoroutine()

	first := g.client(t, tokenTwo, nil)
	rawSession(t, g.url, tokenTwo)
	eventually(t, "two sessions open", func() bool { return g.srv.OpenSessions() == 2 })

	resp, body := postMCP(t, g.url, tokenTwo, initializeBody)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				StringCode string `json:"string_code"`
				Details    string `json:"details"`
				Retry      *struct {
					SuggestedDelayMS int64 `json:"suggested_delay_ms"`
				} `json:"retry"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &msg), body)
	assert.Equal(t, "2.0", msg.JSONRPC)
	assert.JSONEq(t, "1", string(msg.ID), "the initialize's id")
	assert.Equal(t, "RATE_LIMITED", msg.Error.Data.StringCode)
	assert.Contains(t, msg.Error.Data.Details, "too many connections")
	require.NotNil(t, msg.Error.Data.Retry)
	assert.Positive(t, msg.Error.Data.Retry.SuggestedDelayMS)

	// The SDK client reads 429 as transient and reports its status, not
	// the body.
	_, err := g.connect(t, tokenTwo, nil)
	require.Error(t, err, "the SDK client is refused too")
	assert.Contains(t, err.Error(), "Too Many Requests")
	assert.Equal(t, 2, g.srv.OpenSessions())

	require.NoError(t, first.Close()) // DELETE ends the session
	eventually(t, "the closed session's connection is free", func() bool { return g.srv.OpenSessions() == 1 })
	again := g.client(t, tokenTwo, nil)
	require.NoError(t, again.Ping(t.Context(), nil))

	require.NoError(t, again.Close())
	g.closeSessions()
	eventually(t, "no session open", func() bool { return g.srv.OpenSessions() == 0 })
	_, conns := g.limiterInFlight("two")
	assert.Zero(t, conns, "every connection given back")
	goroutinesBackTo(t, base)
}

// HTTPOptions.MaxSessions bounds sessions across identities: past it a
// new session is refused 503 OVERLOADED, in the protocol's error shape.
func TestSessionsGlobalCap(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), http: HTTPOptions{MaxSessions: 2}})
	g.client(t, "", nil)
	g.client(t, "", nil)
	resp, body := postMCP(t, g.url, "", initializeBody)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Contains(t, body, `"id":1,"error":{"code":1,`)
	assert.Contains(t, body, `"string_code":"OVERLOADED"`)
	_, err := g.connect(t, "", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Service Unavailable")
	assert.Equal(t, 2, g.srv.OpenSessions())
	assert.Equal(t, 2.0, testutil.ToFloat64(g.srv.opts.Front.Metrics().HTTPRefused.WithLabelValues(refusedSessions)), "both refusals counted")
}

// A session that sends nothing for the idle timeout is closed: its GET
// stream ends, its connection and session slot are freed (the identity,
// refused a third session while both lived, gets one again) and its
// goroutines end. A tiny timeout, waited for as a condition.
func TestIdleSessionsAreReaped(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), authFile: twoConnsAuth(""),
		http: HTTPOptions{SessionTimeout: 2 * time.Second}})
	base := runtime.NumGoroutine()
	var streams []<-chan struct{}
	for range 2 {
		sid := rawSession(t, g.url, tokenTwo)
		streams = append(streams, openGET(t, g.url, tokenTwo, sid))
	}
	resp, _ := postMCP(t, g.url, tokenTwo, initializeBody)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "two sessions are the identity's limit")
	for _, ended := range streams {
		select {
		case <-ended:
		case <-time.After(20 * time.Second):
			t.Fatal("the idle session's GET stream did not end")
		}
	}
	eventually(t, "idle sessions reaped", func() bool { return g.srv.OpenSessions() == 0 })
	_, conns := g.limiterInFlight("two")
	assert.Zero(t, conns)
	sid := rawSession(t, g.url, tokenTwo)
	assert.NotEmpty(t, sid, "the identity's connections are free again")
	goroutinesBackTo(t, base+sessionGoroutines)
}

// Lists, reads and pings are charged to the identity's request rate like
// any call: once the burst is spent, tools/list, resources/list, ping and
// a read of an unknown resource answer RATE_LIMITED.
func TestListRequestsAreRateLimited(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t),
		authFile: twoConnsAuth(", requests_per_second: 0.001, burst: 4")})
	cs := g.client(t, tokenTwo, nil) // server/discover and initialize
	ctx := t.Context()
	_, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	_, err = cs.ListPrompts(ctx, nil)
	require.NoError(t, err, "the fourth request of the burst")

	limited := func(what string, err error) {
		t.Helper()
		e := rpcErr(t, err)
		assert.Contains(t, string(e.Data), `"string_code":"RATE_LIMITED"`, what)
		assert.Contains(t, string(e.Data), `"suggested_delay_ms"`, what)
	}
	_, err = cs.ListTools(ctx, nil)
	limited("tools/list", err)
	_, err = cs.ListResources(ctx, nil)
	limited("resources/list", err)
	_, err = cs.ListResourceTemplates(ctx, nil)
	limited("resources/templates/list", err)
	limited("ping", cs.Ping(ctx, nil))
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://acme.none/1.0.0/SKILL.md"})
	limited("an unknown resource", err)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "no.such.tool", Arguments: map[string]any{}})
	limited("an unknown tool", err)
}

// A session whose token is removed from the auth file is closed at the
// reload: its GET stream ends and its connection is freed; a session of a
// token that stays is untouched.
func TestRevokedTokenEndsSessionStreams(t *testing.T) {
	const kept = "sgt_mcp-sessions-kept"
	keptEntry := "  - name: kept\n    class: agent\n    tokens: [" + auth.HashToken(kept) + "]\n" +
		"    methods: [\"*\"]\n    namespaces: [\"*\"]\n"
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), authFile: twoConnsAuth("") + keptEntry})
	revokedStream := openGET(t, g.url, tokenTwo, rawSession(t, g.url, tokenTwo))
	keptSID := rawSession(t, g.url, kept)
	keptStream := openGET(t, g.url, kept, keptSID)
	eventually(t, "both sessions open", func() bool { return g.srv.OpenSessions() == 2 })

	require.NoError(t, os.WriteFile(g.authPath, []byte("identities:\n"+keptEntry), 0o600))
	require.NoError(t, g.store.Reload())
	select {
	case <-revokedStream:
	case <-time.After(20 * time.Second):
		t.Fatal("the revoked token's GET stream is still open after the reload")
	}
	eventually(t, "the revoked session's slot freed", func() bool { return g.srv.OpenSessions() == 1 })
	_, conns := g.limiterInFlight("two")
	assert.Zero(t, conns)
	select {
	case <-keptStream:
		t.Fatal("the kept token's stream ended")
	default:
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"ping"}`))
	require.NoError(t, err)
	mcpHeaders(req, kept, keptSID)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the kept session still answers")
}

// Every answer of /mcp is private to its caller and not to be stored by
// a shared cache: results, SSE streams and refusals alike.
func TestAnswersAreNotCacheable(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t), authFile: twoConnsAuth("")})
	resp, _ := postMCP(t, g.url, tokenTwo, initializeBody)
	assert.Equal(t, "private, no-store, no-transform", resp.Header.Get("Cache-Control"), "initialize")
	sid := resp.Header.Get("Mcp-Session-Id")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.url,
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	require.NoError(t, err)
	mcpHeaders(req, tokenTwo, sid)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "private, no-store, no-transform", resp.Header.Get("Cache-Control"), "tools/list")

	resp, _ = postMCP(t, g.url, "sgt_wrong", initializeBody)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "private, no-store, no-transform", resp.Header.Get("Cache-Control"), "a refusal")
}

// sessionGoroutines is what the httptest server may keep for the
// connections the test's raw session still uses.
const sessionGoroutines = 4

// closeSessions ends every session the server holds, as clients that went
// away for good would once they idle out.
func (g *gateway) closeSessions() {
	for ss := range g.srv.SDK().Sessions() {
		_ = ss.Close()
	}
}

func (g *gateway) limiterInFlight(name string) (runs, conns int) {
	return g.srv.opts.Limiter.InFlight(name)
}

// A session refused for the identity's connection limit uses up nothing
// of its request rate, as a refused call does not.
func TestRefusedSessionCostsNoRate(t *testing.T) {
	authFile := "identities:\n  - name: one\n    class: agent\n    tokens: [" + auth.HashToken(tokenTwo) + "]\n" +
		"    methods: [\"*\"]\n    namespaces: [\"*\"]\n    limits: {max_connections: 1, requests_per_second: 0.001, burst: 3}\n"
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), authFile: authFile})
	cs := g.client(t, tokenTwo, nil) // server/discover and initialize: two of three
	for range 3 {
		resp, body := postMCP(t, g.url, tokenTwo, initializeBody)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Contains(t, body, "too many connections")
	}
	require.NoError(t, cs.Close())
	eventually(t, "the session's connection free", func() bool { return g.srv.OpenSessions() == 0 })
	resp, body := postMCP(t, g.url, tokenTwo, initializeBody)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the third request of the burst is still there: %s", body)
}
