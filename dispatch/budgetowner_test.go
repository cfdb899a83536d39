package dispatch

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// Issue 26, item 11, through the dispatcher: the share a framed
// connection is charged to is its identity's, not the connection's. Alice
// fills her half of the gateway-wide budget with answers one connection
// does not read; her second connection is refused OVERLOADED for an answer
// that would take her past it, while bob is sent the same answer.
func TestBudgetShareIsTheIdentitys(t *testing.T) {
	file := "identities:\n" +
		"  - {name: alice, class: agent, tokens: [" + auth.HashToken(tokenAlice) + `], methods: ["*"], namespaces: ["*"]}` + "\n" +
		"  - {name: bob, class: agent, tokens: [" + auth.HashToken(tokenBob) + `], methods: ["*"], namespaces: ["*"]}` + "\n"
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) { o.Authn = store })
	const blobBytes = 30000
	content := strings.Repeat("x", blobBytes)
	aliceBlob := createBlob(t, e.as(tokenAlice)[1], content)
	bobBlob := createBlob(t, e.as(tokenBob)[1], content)

	budget := session.NewFairBudget(8*blobBytes, 0.5) // 120000 bytes per identity
	cfg := session.DefaultConfig()
	cfg.MaxMessageSize = testMaxMessage
	cfg.Metrics = e.metrics
	cfg.Budget = budget
	srv, err := newFramedServer(cfg, e.d)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	dial := func(token string) *session.Conn {
		a, b := net.Pipe()
		srv.ServeConn(b, "pipe")
		c, err := session.NewClientConn(a, session.ClientConfig(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, initialize(c, token))
		return c
	}
	readFull := func(id string) json.RawMessage {
		return json.RawMessage(`{"blob_id":"` + id + `","mode":"full","max_bytes":` + "40000" + `}`)
	}

	// Alice's first connection asks for three answers of ~30 KB and reads
	// none: they hold most of her share.
	a, b := net.Pipe()
	srv.ServeConn(b, "pipe")
	t.Cleanup(func() { _ = a.Close() })
	wire := frameOf(t, `{"jsonrpc":"2.0","method":"Initialize","params":{"protocol_version":"1.0","token":"`+tokenAlice+`"},"id":"i"}`)
	for _, id := range []string{"r-1", "r-2", "r-3"} {
		wire = append(wire, frameOf(t, `{"jsonrpc":"2.0","method":"read_blob","params":`+string(readFull(aliceBlob))+`,"id":"`+id+`"}`)...)
	}
	go func() { _, _ = a.Write(wire) }()
	require.Eventually(t, func() bool { return budget.Used() >= 3*blobBytes }, 10*time.Second, 5*time.Millisecond)
	assert.False(t, budget.Full(), "the budget itself has room")

	_, err = dial(tokenAlice).Call(context.Background(), "read_blob", readFull(aliceBlob))
	var te *transport.Error
	require.ErrorAs(t, err, &te, "alice's second connection is past her share")
	assert.Equal(t, transport.StringOverloaded, te.EffectiveCode())
	assert.Contains(t, te.Details, "one identity may hold 120000 bytes")

	res, err := dial(tokenBob).Call(context.Background(), "read_blob", readFull(bobBlob))
	require.NoError(t, err, "bob is served from the other half")
	assert.Contains(t, string(res), content)
}

func frameOf(t *testing.T, body string) []byte {
	t.Helper()
	b, err := transport.AppendFrame(nil, []byte(body), testMaxMessage)
	require.NoError(t, err)
	return b
}
