//lint:file-ignore SA1019 MCP logging (logging/setLevel and the _meta log level) is deprecated from protocol 2026-07-28 but still served to clients of earlier versions; a run is streamed to a client that asked for log messages.

package mcpfront

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/metrics"
)

// BenchmarkFrontDoor is the gateway's own cost of one trivial run at each
// front door, in process and without a network: POST /rpc execute_skill
// through httpfront's handler (its JSON-RPC envelope decoded and the
// answer encoded), and an MCP tools/call of the skill's tool from the
// request the SDK has decoded to the result it will encode. The runner
// answers at once, so only the front doors and dispatch differ. The ratio
// mcp/rpc is the front-door cost docs/performance.md quotes; the SDK's own
// decoding and encoding, which no front door of ours can change, is in
// BenchmarkToolsCallHTTP.
func BenchmarkFrontDoor(b *testing.B) {
	f := newFixture(b, writeSkills(b, 1), Options{})
	b.Run("rpc", func(b *testing.B) {
		h := f.http.Config.Handler
		body := `{"jsonrpc":"2.0","id":1,"method":"execute_skill","params":{"name":"acme.s0.run","args":{"a":1,"b":2}}}`
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"result"`) {
				b.Fatal(rec.Code, rec.Body.String())
			}
		}
	})
	// The /rpc call again from its decoded envelope to its encoded result:
	// the dispatch part of the rpc line.
	b.Run("rpc-dispatch", func(b *testing.B) {
		front := f.d.Front(metrics.FrontHTTP)
		id, err := front.Authenticate("", nil)
		require.NoError(b, err)
		ctx := context.Background()
		// What httpfront hands dispatch is httpfront's cost, made once here.
		req := &dispatch.Request{Method: dispatch.MethodExecuteSkill, Identity: id, Remote: "bench",
			Params: json.RawMessage(`{"name":"acme.s0.run","args":{"a":1,"b":2}}`)}
		b.ReportAllocs()
		for b.Loop() {
			res, e := front.Serve(ctx, req)
			if e != nil || len(res) == 0 {
				b.Fatal(e)
			}
		}
	})
	b.Run("mcp", func(b *testing.B) { benchToolCall(b, f, false) })
	// A run that reports progress twice and writes a log line, to a
	// client that asked for progress and log messages: the cost of
	// turning run events into MCP notifications.
	b.Run("mcp-streamed", func(b *testing.B) {
		benchToolCall(b, newRunnerFixture(b, writeSkills(b, 1), Options{}, eventsRunner{}), true)
	})
}

// benchToolCall calls the skill tool's handler as the SDK does once it
// has read a tools/call; streamed asks for the run's events.
func benchToolCall(b *testing.B, f *fixture, streamed bool) {
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.SDK().Connect(ctx, st, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = cs.Close() })
	id, err := f.d.Front(metrics.FrontMCP).Authenticate("", nil)
	require.NoError(b, err)
	handler := f.srv.runSkill("acme.s0.run")
	params := &mcp.CallToolParamsRaw{Name: "acme.s0.run", Arguments: json.RawMessage(`{"a":1,"b":2}`)}
	if streamed {
		require.NoError(b, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
		params.SetProgressToken("bench")
	}
	// What the SDK hands the handler is the SDK's cost, made once here.
	req := &mcp.CallToolRequest{Session: ss, Params: params,
		Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{extraIdentity: id}}}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := handler(ctx, req)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
