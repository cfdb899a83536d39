package main

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/session"
)

// startTLSGateway serves the session machinery over TLS with a fresh
// self-signed certificate and returns the address and a CA file.
func startTLSGateway(t *testing.T) (addr, caFile string) {
	certFile, keyFile, _, err := selfSigned(t.TempDir())
	require.NoError(t, err)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	srv, err := session.NewServer(session.DefaultConfig(), testHandler)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), "tls")
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String(), certFile
}

func TestLoadTLS(t *testing.T) {
	addr, ca := startTLSGateway(t)
	for _, tf := range []targetFlags{
		{addr: addr, tls: true, caFile: ca},
		{addr: addr, tls: true, insecure: true},
	} {
		tgt, err := tf.target(nil)
		require.NoError(t, err)
		res, err := runLoad(testCtx(t), loadConfig{Target: tgt, Conns: 2, Depth: 8, Requests: 200, Method: "_Keepalive", Params: []byte(`{}`)}, testLog(t))
		require.NoError(t, err)
		assert.Equal(t, uint64(200), res.Responses)
	}
}

func TestTLSVerifies(t *testing.T) {
	addr, _ := startTLSGateway(t)
	tf := targetFlags{addr: addr, tls: true}
	tgt, err := tf.target(nil)
	require.NoError(t, err)
	res, err := runLoad(testCtx(t), loadConfig{Target: tgt, Conns: 1, Requests: 1, Method: "_Keepalive", Params: []byte(`{}`)}, testLog(t))
	require.ErrorIs(t, err, errNoConns)
	assert.Equal(t, 1, res.ConnFailed)
}

func TestTargetFlagsBad(t *testing.T) {
	_, err := (&targetFlags{addr: "nohostport", tls: true}).target(nil)
	require.ErrorIs(t, err, errUsage)
	_, err = (&targetFlags{addr: "127.0.0.1:1", tls: true, caFile: "/nonexistent"}).target(nil)
	require.Error(t, err)
	args := (&targetFlags{addr: "a:1", tls: true, srcIPs: 3}).args()
	assert.Contains(t, args, "--tls=true")
	assert.Contains(t, args, "3")
}
