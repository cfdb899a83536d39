package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `skillgate mcp` answers a line that is not a JSON-RPC message with the
// JSON-RPC error for it (-32700 for bad JSON, -32600 for JSON that is no
// message) and goes on serving the same session, where it used to exit
// on the first such line.
func TestMCPStdioSurvivesMalformedLines(t *testing.T) {
	cmd := exec.Command(binary, "mcp", "--log-level", "error", "--sandbox-workers", "0", "--data-dir", t.TempDir())
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})

	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`this is not json`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"`,
		`{"not":"a message"}`,
		`[]`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}
	_, err = io.WriteString(stdin, strings.Join(lines, "\n")+"\n")
	require.NoError(t, err)

	type answer struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	got := make(chan answer)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var a answer
			if json.Unmarshal(sc.Bytes(), &a) == nil {
				got <- a
			}
		}
	}()
	var codes []int
	for {
		select {
		case a, ok := <-got:
			require.True(t, ok, "skillgate mcp ended its output before answering the last ping (codes so far %v)", codes)
			if a.Error != nil {
				assert.JSONEq(t, "null", string(a.ID))
				codes = append(codes, a.Error.Code)
			}
			if string(a.ID) == "3" {
				assert.Nil(t, a.Error, "the ping after the malformed lines is answered")
				assert.Equal(t, []int{-32700, -32700, -32600, -32600}, codes)
				return
			}
		case <-time.After(mcpTimeout):
			t.Fatal("no answer to the last ping")
		}
	}
}

// Two `skillgate mcp` processes started on one --data-dir, as desktop
// hosts start them, both serve: the second, finding the blob store held,
// keeps its blobs in an instance directory of its own.
func TestMCPStdioTwoProcessesOneDataDir(t *testing.T) {
	dir := t.TempDir()
	first := connectStdio(t, nil, "--sandbox-workers", "0", "--data-dir", dir)
	second := connectStdio(t, nil, "--sandbox-workers", "0", "--data-dir", dir)
	for i, cs := range []*mcp.ClientSession{first, second} {
		res, err := cs.CallTool(mcpContext(t), &mcp.CallToolParams{Name: "create_blob", Arguments: map[string]any{"content": "x"}})
		require.NoError(t, err, "process %d", i+1)
		assert.False(t, res.IsError, "process %d", i+1)
		assert.Contains(t, structured(t, res), `"blob_id":"blob:`, "process %d", i+1)
	}
	assert.DirExists(t, dir+"/instances/1")
}

// `skillgate serve` wires the session bounds and revocation to /mcp:
// past --mcp-max-sessions a new session is refused 503 OVERLOADED and the
// gauge shows the sessions held; a token removed from the auth file ends
// its session's GET stream at the reload the file watch makes.
func TestMCPHTTPSessionBoundAndRevocation(t *testing.T) {
	authFile, full, limited := writeAuthFile(t)
	g := startGateway(t, "--auth-file", authFile, "--sandbox-workers", "0", "--mcp-max-sessions", "2")
	url := "http://" + g.addrs["http"] + "/mcp"

	post := func(token, sid, body string) *http.Response {
		req, err := http.NewRequestWithContext(mcpContext(t), http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	open := func(token string) string {
		resp := post(token, "", initialize)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		sid := resp.Header.Get("Mcp-Session-Id")
		require.Less(t, post(token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).StatusCode, 300)
		return sid
	}
	revokedSID := open(limited)
	open(full)
	assert.Equal(t, http.StatusServiceUnavailable, post(full, "", initialize).StatusCode, "past --mcp-max-sessions")
	assert.Contains(t, scrape(t, "http://"+g.addrs["metrics"]+"/metrics"), "skillgate_mcp_sessions 2")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+limited)
	req.Header.Set("Mcp-Session-Id", revokedSID)
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, stream.StatusCode)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, stream.Body)
		_ = stream.Body.Close()
	}()

	content, err := os.ReadFile(authFile)
	require.NoError(t, err)
	kept := strings.SplitAfter(string(content), "  - name: docs")[0]
	require.NoError(t, os.WriteFile(authFile+".tmp", []byte(strings.TrimSuffix(kept, "  - name: docs")), 0o600))
	require.NoError(t, os.Rename(authFile+".tmp", authFile))
	select {
	case <-ended:
	case <-time.After(mcpTimeout):
		t.Fatal("the removed token's GET stream outlived the reload")
	}
	waitFor(t, "the revoked session's place freed", func() bool {
		return strings.Contains(scrape(t, "http://"+g.addrs["metrics"]+"/metrics"), "skillgate_mcp_sessions 1")
	})
	assert.Equal(t, http.StatusOK, post(full, "", initialize).StatusCode, "a place is free again")
}
