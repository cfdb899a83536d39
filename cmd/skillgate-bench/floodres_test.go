package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The MCP-session flood sends initialize requests without a session id
// and counts an answer with a session id as a session opened, any other
// as a refusal.
func TestFloodMCPSessionsCounts(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" || r.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
		if n.Add(1) <= 3 {
			w.Header().Set("Mcp-Session-Id", "s")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	var c resourceCounts
	floodMCPSessions(ctx, strings.TrimPrefix(srv.URL, "http://"), 2, &c)
	assert.EqualValues(t, 3, c.accepted.Load())
	assert.Positive(t, c.refused.Load())
	assert.Equal(t, c.requests.Load(), c.accepted.Load()+c.refused.Load())
}

// The upload flood begins uploads and sends their chunks in order, and
// never finishes one.
func TestFloodUploadsNeverFinishes(t *testing.T) {
	var mu sync.Mutex
	methods := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		methods[req.Method]++
		mu.Unlock()
		switch req.Method {
		case "begin_upload":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"upload_id":"u","max_chunk_bytes":1024}}`))
		default:
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"received_bytes":1}}`))
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	var c resourceCounts
	floodUploads(ctx, strings.TrimPrefix(srv.URL, "http://"), 4096, &c)
	mu.Lock()
	defer mu.Unlock()
	assert.Positive(t, methods["begin_upload"])
	assert.GreaterOrEqual(t, methods["upload_chunk"], 4*(methods["begin_upload"]-1), "every chunk of each upload")
	assert.Zero(t, methods["finish_upload"])
	assert.Positive(t, c.accepted.Load())
}
