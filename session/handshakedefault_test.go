package session

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// With the defaults a TLS peer has 10 s to complete its handshake: one that
// connects and sends nothing is closed exactly then, as a failed handshake,
// and one that completes it is served.
func TestHandshakeTimeoutDefault(t *testing.T) {
	p := getPKI(t)
	// Time stands at 2000 inside the bubble, before the certificates.
	now := time.Now()
	clientConf := p.clientTLS(nil)
	clientConf.Time = func() time.Time { return now }
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.InitTimeout = 0
		cfg.Metrics = metrics.New("test")
		srv, err := NewServer(cfg, newTestHandler())
		require.NoError(t, err)
		defer func() { _ = srv.Close() }()

		silent, b := net.Pipe()
		defer silent.Close()
		srv.ServeConn(tls.Server(b, p.serverTLS(false)), "tls")
		start := time.Now()
		_, err = silent.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF)
		assert.Equal(t, 10*time.Second, time.Since(start))
		synctest.Wait()
		assert.Equal(t, 1.0, testutil.ToFloat64(cfg.Metrics.ConnectionsClosed.WithLabelValues("tls", "tls_handshake_failed")))

		a, b := net.Pipe()
		srv.ServeConn(tls.Server(b, p.serverTLS(false)), "tls")
		tc := tls.Client(a, clientConf)
		defer tc.Close()
		require.NoError(t, tc.Handshake())
		peer := &peer{t: t, nc: tc, fr: transport.NewReader(tc, 1<<20), bubbled: true}
		assert.Nil(t, peer.call("_Keepalive", `{}`).Error)
	})
}
