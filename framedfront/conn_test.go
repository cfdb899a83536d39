package framedfront

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/session"
)

// grabbed is what a "grab" request saw on the gateway's side: its
// connection (with the state Bind gave it) and its id as a caller names it.
type grabbed struct {
	conn  *session.Conn
	reqID string
}

// grabHandler is the front door with one more method, "grab", which hands
// the test the gateway's side of the connection, so that a caller can be
// driven as the dispatcher drives it, on a connection the session serves.
type grabHandler struct {
	*Handler
	grabs chan grabbed
}

func (g grabHandler) Handle(ctx context.Context, req *session.Request) (any, error) {
	if req.Method != "grab" {
		return g.Handler.Handle(ctx, req)
	}
	c := &caller{conn: req.Conn, req: req}
	g.grabs <- grabbed{conn: req.Conn, reqID: c.RequestID()}
	return map[string]any{}, nil
}

// serveGrab starts the front door with cfg's budget (no Initialize
// required, so that "grab" may come first) and returns the client's
// connection and the gateway's side of it.
func serveGrab(t *testing.T, budget *session.Budget) (*session.Conn, grabbed) {
	t.Helper()
	cfg := session.DefaultConfig()
	cfg.Budget = budget
	h := grabHandler{Handler: New(openDispatcher(t)), grabs: make(chan grabbed, 1)}
	c := dial(t, cfg, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Call(ctx, "grab", json.RawMessage(`{}`))
	require.NoError(t, err)
	return c, <-h.grabs
}

// counter is a connection slot's release, counting its calls.
type counter struct{ n atomic.Int32 }

func (c *counter) release() { c.n.Add(1) }

// A connection holds the slot of the identity Initialize established
// until it closes; a slot established on a connection that already closed
// is freed at once. The session takes one Initialize per connection, but
// the state does not count on it: a second Establish frees the first slot.
func TestEstablishHoldsTheSlotUntilClose(t *testing.T) {
	client, g := serveGrab(t, nil)
	c := &caller{conn: g.conn}
	assert.NotEmpty(t, g.reqID, "a request's caller names the request's id")

	_, err := c.Identity()
	require.ErrorIs(t, err, auth.ErrNoCredentials, "before Initialize")
	state := g.conn.State().(*ConnState)
	assert.Empty(t, state.BudgetOwner(), "no owner before Initialize")

	first, second := auth.Anonymous(auth.Limits{}), auth.Anonymous(auth.Limits{})
	var slot1, slot2 counter
	require.NoError(t, c.Establish(first, slot1.release))
	id, err := c.Identity()
	require.NoError(t, err)
	assert.Same(t, first, id)
	assert.Equal(t, "anonymous", state.BudgetOwner())
	assert.Zero(t, slot1.n.Load(), "the slot is held while the connection is open")

	require.NoError(t, c.Establish(second, slot2.release))
	assert.EqualValues(t, 1, slot1.n.Load(), "a second Establish frees the first slot")
	assert.Zero(t, slot2.n.Load())

	// A reload's fresh copy replaces the identity it is a copy of, not
	// another one that took its place (SessionCaller.Revalidated).
	fresh := auth.Anonymous(auth.Limits{})
	c.Revalidated(first, fresh)
	id, _ = c.Identity()
	assert.Same(t, second, id, "the identity of the first Initialize is gone")
	c.Revalidated(second, fresh)
	id, _ = c.Identity()
	assert.Same(t, fresh, id)

	require.NoError(t, client.Close())
	select {
	case <-g.conn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway's side must close")
	}
	require.Eventually(t, func() bool { return slot2.n.Load() == 1 }, 10*time.Second, 5*time.Millisecond,
		"closing frees the slot held")
	assert.EqualValues(t, 1, slot1.n.Load(), "freed once")
	_, err = c.Identity()
	require.ErrorIs(t, err, auth.ErrNoCredentials, "a closed connection is nobody")
	assert.Empty(t, state.BudgetOwner())

	var late counter
	require.ErrorIs(t, c.Establish(auth.Anonymous(auth.Limits{}), late.release), session.ErrClosed)
	assert.EqualValues(t, 1, late.n.Load(), "a slot established after the close is freed at once")
	_, err = c.Identity()
	require.ErrorIs(t, err, auth.ErrNoCredentials)
	state.Closed()
	assert.EqualValues(t, 1, slot2.n.Load(), "a second teardown frees nothing more")
}

// A connection the Handler did not bind has no state: nobody, and an
// Initialize on it fails and frees its slot.
func TestUnboundConnection(t *testing.T) {
	c := &caller{conn: &session.Conn{}}
	_, err := c.Identity()
	require.ErrorIs(t, err, auth.ErrNoCredentials)
	var slot counter
	require.ErrorIs(t, c.Establish(auth.Anonymous(auth.Limits{}), slot.release), errUnbound)
	assert.EqualValues(t, 1, slot.n.Load())
	c.Revalidated(nil, auth.Anonymous(auth.Limits{})) // nothing to replace
	_, err = c.Identity()
	require.ErrorIs(t, err, auth.ErrNoCredentials)
}

// The session's backpressure reaches the dispatcher as its own
// ErrBackpressure; any other error (a closed connection) stays itself.
func TestTryNotifyBackpressure(t *testing.T) {
	budget := session.NewBudget(1 << 20)
	client, g := serveGrab(t, budget)
	c := &caller{conn: g.conn}
	require.NoError(t, c.TryNotify("n", map[string]int{"a": 1}))
	assert.False(t, c.Backlogged())

	budget.Reserve(1 << 20)
	err := c.TryNotify("n", map[string]int{"a": 2})
	require.ErrorIs(t, err, dispatch.ErrBackpressure, "the gateway-wide budget is full")
	budget.Release(1 << 20)
	require.NoError(t, c.TryNotify("n", map[string]int{"a": 3}))

	require.NoError(t, client.Close())
	select {
	case <-g.conn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway's side must close")
	}
	err = c.TryNotify("n", map[string]int{"a": 4})
	require.Error(t, err)
	assert.NotErrorIs(t, err, dispatch.ErrBackpressure, "a closed connection is no backpressure")
	assert.ErrorIs(t, err, session.ErrClosed)
}

// Only a number out of its range ends the connection (001); any other
// bad parameter is an answer, and the connection goes on.
func TestOtherParamErrorsKeepTheConnection(t *testing.T) {
	c := serve(t)
	_, err := call(t, c, "Initialize", `{"protocol_version":"1.0"}`)
	require.NoError(t, err)
	_, err = call(t, c, "list_skills", `{"limit":"ten"}`)
	require.Error(t, err)
	_, err = call(t, c, "list_skills", `{}`)
	require.NoError(t, err, "the connection is still open")
	assert.Nil(t, c.PeerCloseReason())
}
