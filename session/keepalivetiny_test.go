package session

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// Any positive keepalive interval is valid, down to one nanosecond. The
// jitter is up to a tenth of the interval, both ends included: below 10 ns
// there is none and the probe comes after exactly the interval; at 10 ns it
// comes after 9 or 10.
func TestKeepaliveTinyIntervals(t *testing.T) {
	for _, d := range []time.Duration{1, 9, 10} {
		t.Run(d.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, p := pipeServer(t, func(c *Config) { c.InitTimeout, c.KeepaliveInterval = 0, d })
				start := time.Now()
				m := p.recv()
				require.Equal(t, transport.MethodKeepalive, m.Method)
				probed := time.Since(start)
				assert.LessOrEqual(t, probed, d)
				assert.GreaterOrEqual(t, probed, d-d/10)
				_ = srv.Close()
			})
		})
	}
}
