package mcpfront

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sgauth "github.com/skillgate/skillgate/dispatch/auth"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// postMCP sends one raw JSON-RPC request to the endpoint.
func postMCP(t *testing.T, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(out)
}

// A request whose credentials are refused gets 401 with a Bearer
// challenge and the reason before the SDK sees it; a good token is
// served. The SDK client cannot connect with a refused token.
func TestEndpointRefusesBadCredentials(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), authFile: visibilityAuth()})
	for _, token := range []string{"", "sgt_not-a-known-token"} {
		resp, body := postMCP(t, g.url, token, initializeBody)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, token)
		assert.Equal(t, `Bearer realm="skillgate"`, resp.Header.Get("WWW-Authenticate"))
		assert.True(t, strings.HasPrefix(body, "authentication required: send Authorization: Bearer <token> ("), body)
	}
	resp, body := postMCP(t, g.url, tokenAll, initializeBody)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"serverInfo"`)
	// End the session that initialize opened.
	del, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, g.url, nil)
	require.NoError(t, err)
	del.Header.Set("Authorization", "Bearer "+tokenAll)
	del.Header.Set("Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	dresp, err := http.DefaultClient.Do(del)
	require.NoError(t, err)
	_ = dresp.Body.Close()
	assert.Less(t, dresp.StatusCode, 300)

	_, err = g.connect(t, "sgt_not-a-known-token", nil)
	require.Error(t, err)
	cs := g.client(t, tokenAll, nil)
	require.NoError(t, cs.Ping(t.Context(), nil))
}

// An Authenticate that vouches for nobody without an error lets nothing
// through: the SDK's bearer check refuses the request.
func TestEndpointWithoutIdentityRefused(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(),
		http: HTTPOptions{Authenticate: func(*http.Request) (*sgauth.Identity, error) { return nil, nil }}})
	resp, body := postMCP(t, g.url, "", initializeBody)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
	assert.NotContains(t, body, "serverInfo")
}
