package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// testHandler serves Initialize and Echo; anything else is not found.
var testHandler = session.HandlerFunc(func(_ context.Context, req *session.Request) (any, error) {
	switch req.Method {
	case "Initialize":
		return json.RawMessage(`{}`), nil
	case "Echo":
		return req.Params, nil
	}
	return nil, transport.NewError(transport.CodeMethodNotFound, "Method not found.")
})

// startGateway serves the session machinery in-process on 127.0.0.1:0.
func startGateway(t *testing.T, keepalive time.Duration) string {
	cfg := session.DefaultConfig()
	if keepalive > 0 {
		cfg.KeepaliveInterval = keepalive
	}
	cfg.MaxInflight = 1024
	srv, err := session.NewServer(cfg, testHandler)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln, "tcp")
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
