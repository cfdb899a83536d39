package httpfront

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/sandbox"
)

// heldUntil's runs start (an event to stream), then last until it is
// closed or their context ends.
type heldUntil chan struct{}

func (r heldUntil) Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error) {
	if job.Observer != nil && job.Observer.Admitted != nil {
		job.Observer.Admitted()
	}
	job.Observer.Started(0)
	select {
	case <-r:
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// An SSE stream of POST /rpc (watch_run with Accept: text/event-stream)
// ends once a reload removes the token it was opened with: its last event
// is the response, AUTH_REQUIRED, and the body ends.
func TestRevokedTokenEndsEventStream(t *testing.T) {
	const token = "sgt_stream-token-for-tests"
	path := filepath.Join(t.TempDir(), "auth.yaml")
	file := func(tokens string) []byte {
		return []byte("identities:\n  - name: agent\n    class: agent\n    tokens: [" + tokens + "]\n" +
			"    methods: [\"*\"]\n    namespaces: [\"*\"]\n")
	}
	require.NoError(t, os.WriteFile(path, file(auth.HashToken(token)), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	release := make(heldUntil)
	defer close(release)
	e := newEnvOpts(t, examplesDir(), func(o *dispatch.Options) {
		o.Authn = store
		o.Runner = release
	})
	call := func(ctx context.Context, body string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.http.URL+"/rpc", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := call(t.Context(), `{"jsonrpc":"2.0","id":1,"method":"run_code","params":{"language":"python","code":"x","async":true}}`)
	var started rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&started))
	resp.Body.Close()
	var ref struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(started.Result, &ref), "%+v", started)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp = call(ctx, `{"jsonrpc":"2.0","id":2,"method":"watch_run","params":{"run_id":"`+ref.RunID+`"}}`)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan(), "the stream's first event")
	require.Equal(t, "event: run_event", lines.Text())

	require.NoError(t, os.WriteFile(path, file(""), 0o600))
	require.NoError(t, store.Reload())
	var last string
	for lines.Scan() { // ends at the end of the body, or at the minute's deadline
		if strings.HasPrefix(lines.Text(), "data: ") {
			last = lines.Text()
		}
	}
	require.NoError(t, ctx.Err(), "the stream did not end")
	assert.Contains(t, last, `"string_code":"AUTH_REQUIRED"`)
	assert.Contains(t, last, `"id":2`)
}
