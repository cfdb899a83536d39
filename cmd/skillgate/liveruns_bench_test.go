package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
)

// BenchmarkStreamOverhead runs the same trivial run_code plain and with
// stream: true through a real gateway and sandbox, one at a time on one
// connection: the ratio of the two is what streaming adds to a run.
func BenchmarkStreamOverhead(b *testing.B) {
	if err := sandbox.CheckIsolation(sandbox.DefaultConfig()); err != nil {
		b.Skipf("isolation unavailable: %v", err)
	}
	g := startGateway(b, "--sandbox-workers", "1", "--sandbox-warm-pool", "2")
	conn, err := session.Dial(context.Background(), g.addrs["tcp"], nil, session.ClientConfig(), nil)
	require.NoError(b, err)
	defer conn.Close()
	_, err = conn.Call(context.Background(), "Initialize", map[string]any{"protocol_version": "1.0"})
	require.NoError(b, err)
	for _, mode := range []string{"plain", "stream"} {
		params := json.RawMessage(`{"language":"python","code":"def main(args):\n    print('hi')\n    return {}","stream":` +
			map[string]string{"plain": "false", "stream": "true"}[mode] + `}`)
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				_, err := conn.Call(context.Background(), "run_code", params)
				require.NoError(b, err)
			}
		})
	}
}
