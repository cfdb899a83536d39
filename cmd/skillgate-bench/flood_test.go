package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The framed flood sends valid frames with fresh ids: against an
// in-process gateway it runs until its context ends, without being
// aborted for a malformed or reused message.
func TestFloodFramedSendsUntilDone(t *testing.T) {
	addr := startGateway(t, 0)
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	sent, _ := floodFramed(ctx, addr, true, keepaliveFrame)
	assert.Greater(t, sent, int64(len(initFrame)))
}

// The HTTP flood pipelines complete requests.
func TestFloodHTTPSendsRequests(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		select {
		case got <- r.Method + " " + r.URL.Path + " " + b.String():
		default:
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	sent, err := floodHTTP(ctx, strings.TrimPrefix(srv.URL, "http://"), 2)
	require.NoError(t, err)
	assert.Positive(t, sent)
	select {
	case req := <-got:
		assert.Contains(t, req, "POST /rpc ")
		assert.Contains(t, req, "load_skills_protocol_guide")
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the server")
	}
}

func TestScrapeLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# HELP x y\nskillgate_connections_closed_total{listener=\"tcp\",reason=\"slow_reader\"} 3\n"))
	}))
	defer srv.Close()
	lines, err := scrapeLines(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, []string{`skillgate_connections_closed_total{listener="tcp",reason="slow_reader"} 3`}, lines)
	_, err = scrapeLines("http://" + unusedAddr(t))
	assert.Error(t, err)
}

func unusedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
