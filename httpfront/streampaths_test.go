package httpfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// postAccept posts body to /rpc with "Accept: accept" and returns the
// status, the Content-Type and the body.
func postAccept(t *testing.T, url, accept, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/rpc", bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(out)
}

func streamedCall(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"run_code","params":{"language":"python","code":"x","stream":true}}`
}

// A streamed call is answered as server-sent events, each written under
// the write timeout; its run_event notifications name the request by its
// id: a string unquoted, a number as written, null as nothing. Accept
// may list other media types around text/event-stream.
func TestStreamEventsAndRequestIDs(t *testing.T) {
	e := newEnvOpts(t, examplesDir(), func(o *dispatch.Options) { o.Runner = cannedRunner{} })
	_, srv := e.serveHTTP(Options{WriteTimeout: 10 * time.Second})
	for id, want := range map[string]string{`"s1"`: `"request_id":"s1"`, `42`: `"request_id":"42"`, `-7.5`: `"request_id":"-7.5"`} {
		status, ctype, body := postAccept(t, srv.URL, "application/json, text/event-stream;q=0.9", streamedCall(id))
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "text/event-stream", ctype, id)
		assert.Contains(t, body, "event: run_event\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"run_event\"", id)
		assert.Contains(t, body, want, id)
		assert.True(t, strings.HasSuffix(body, "\n\n"), id)
		i := strings.Index(body, "event: response\ndata: ")
		require.GreaterOrEqual(t, i, 0, id)
		assert.Contains(t, body[i:], `"id":`+id, id)
	}
	_, _, body := postAccept(t, srv.URL, "text/event-stream", streamedCall("null"))
	assert.Contains(t, body, "event: run_event")
	assert.NotContains(t, body, `"request_id":"null"`)
	assert.NotContains(t, body, `"request_id":"\"`)
}

// A call that sends no notification is answered as plain JSON even when
// the client accepts events, under the write timeout.
func TestStreamNotStartedAnswersPlainJSON(t *testing.T) {
	e := newEnv(t, examplesDir())
	_, srv := e.serveHTTP(Options{WriteTimeout: 10 * time.Second})
	for _, url := range []string{srv.URL, e.http.URL} { // with and without a write timeout
		for _, accept := range []string{"text/event-stream", "application/json"} {
			status, ctype, body := postAccept(t, url, accept, listCall)
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, "application/json", ctype)
			assert.True(t, strings.HasPrefix(body, `{"jsonrpc":"2.0","id":1,"result":`), body)
			assert.NotContains(t, body, "event:")
		}
	}
}

// Bodies a stream does not take are answered as plain JSON: a batch, a
// notification, an invalid call, and calls refused before they run
// (expired front door, full budget).
func TestStreamNotTaken(t *testing.T) {
	e := newEnvOpts(t, examplesDir(), func(o *dispatch.Options) { o.Runner = cannedRunner{} })
	_, srv := e.serveHTTP(Options{})

	status, ctype, body := postAccept(t, srv.URL, "text/event-stream", "["+streamedCall(`"b1"`)+"]")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", ctype)
	assert.True(t, strings.HasPrefix(body, `[{"jsonrpc":"2.0","id":"b1","error":`), body)
	assert.Contains(t, body, "Accept: text/event-stream", "a batch member cannot stream")

	status, _, body = postAccept(t, srv.URL, "text/event-stream",
		`{"jsonrpc":"2.0","method":"run_code","params":{"language":"python","code":"x","stream":true}}`)
	assert.Equal(t, http.StatusNoContent, status, "a notification: %s", body)

	status, ctype, body = postAccept(t, srv.URL, "text/event-stream", `{"jsonrpc":"1.0","id":3,"method":"run_code","params":{}}`)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", ctype)
	assert.Contains(t, body, `"string_code":"JSONRPC_INVALID_REQUEST"`)

	budget := session.NewBudget(1 << 10)
	_, full := e.serveHTTP(Options{Budget: budget})
	budget.Reserve(1 << 10)
	_, ctype, body = postAccept(t, full.URL, "text/event-stream", streamedCall(`"f"`))
	assert.Equal(t, "application/json", ctype)
	assert.Contains(t, body, `"string_code":"`+transport.StringOverloaded+`"`)
	budget.Release(1 << 10)

	front, expired := e.serveHTTP(Options{})
	front.Expire()
	_, ctype, body = postAccept(t, expired.URL, "text/event-stream", streamedCall(`"x"`))
	assert.Equal(t, "application/json", ctype)
	assert.Contains(t, body, `"string_code":"`+transport.StringServerShutdown+`"`)
}

// Only text/event-stream asks for events: other media types, and a
// malformed Accept, do not.
func TestWantsEventStream(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/event-stream":                    true,
		"TEXT/Event-Stream; charset=utf-8":     true,
		"application/json , text/event-stream": true,
		"application/json":                     false,
		"text/event-streams":                   false,
		"text/event-stream;;":                  false,
		"":                                     false,
	} {
		r, err := http.NewRequest(http.MethodPost, "/rpc", nil)
		require.NoError(t, err)
		r.Header.Set("Accept", accept)
		assert.Equal(t, want, wantsEventStream(r), "%q", accept)
	}
}

// heldRunner starts a run, reports it started, and completes it only
// when the test lets it.
type heldRunner struct{ release chan struct{} }

func (h heldRunner) Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error) {
	if o := job.Observer; o != nil && o.Started != nil {
		o.Started(0)
	}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
}

// Events are written as they come: the client reads the run's first
// event while the run is still going. When the front door expires (the
// drain deadline), the stream ends with its response, though the run
// never finished on its own.
func TestStreamEventsFlushedAsTheyCome(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnvOpts(t, examplesDir(), func(o *dispatch.Options) { o.Runner = heldRunner{release} })
	front, srv := e.serveHTTP(Options{})
	// Unflushed, the first event would wait for the run's end, which
	// waits for the test: the client gives up after 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/rpc", bytes.NewBufferString(streamedCall(`"h"`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "no answer while the run goes on")
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err, "no event while the run goes on")
	assert.Equal(t, "event: run_event\n", line, "the first event, before the run ends")
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"type":"started"`)

	front.Expire()
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Contains(t, string(rest), "event: response\n")
}
