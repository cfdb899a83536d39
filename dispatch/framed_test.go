package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// framedHandler is the framed front door (framedfront.New and
// framedfront.Configure). framedfront imports this package, so the tests
// here cannot import it: the external test package sets it
// (framedhook_test.go), and every framed test goes through the
// production front door.
var framedHandler func(d *Dispatcher, cfg *session.Config) session.Handler

// newFramedServer serves d's methods on framed connections configured by
// cfg, as the gateway does.
func newFramedServer(cfg session.Config, d *Dispatcher) (*session.Server, error) {
	h := framedHandler(d, &cfg)
	return session.NewServer(cfg, h)
}

// SetFramedHandler sets framedHandler, for the external test package.
func SetFramedHandler(h func(d *Dispatcher, cfg *session.Config) session.Handler) { framedHandler = h }

// encodeParams encodes a notification's params as a front door does at
// its wire.
func encodeParams(t *testing.T, params any) json.RawMessage {
	t.Helper()
	obj, err := transport.MarshalObject(params)
	require.NoError(t, err)
	return obj
}
