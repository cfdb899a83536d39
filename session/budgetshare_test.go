package session

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// ownerHandler is the test handler with an owner per connection, named by
// Initialize's "owner" parameter, as dispatch names the identity.
type ownerHandler struct{ *testHandler }

type ownerState struct {
	mu    sync.Mutex
	owner string
}

func (s *ownerState) Closed() {}

func (s *ownerState) BudgetOwner() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner
}

func (h ownerHandler) Bind(*Conn) ConnState { return &ownerState{} }

func (h ownerHandler) Handle(ctx context.Context, req *Request) (any, error) {
	if req.Method == "Initialize" {
		var p struct{ Owner string }
		_ = json.Unmarshal(req.Params, &p)
		st := req.Conn.State().(*ownerState)
		st.mu.Lock()
		st.owner = p.Owner
		st.mu.Unlock()
	}
	return h.testHandler.Handle(ctx, req)
}

// Issue 26, item 11: one identity can hold only its share of the
// gateway-wide budget (half by default). Identity A's connection holds
// answers filling A's share exactly, while the budget itself still has
// room: A's other connection is refused with OVERLOADED naming the share,
// identity B is served, and once A reads its answers A is served again.
func TestBudgetShareBoundsOneIdentity(t *testing.T) {
	budget := NewFairBudget(2*bpQueue, 0.5)
	require.Equal(t, int64(bpQueue), budget.OwnerLimit())
	f := newFixtureWrapped(t, "pipe", func(h *testHandler) Handler { return ownerHandler{h} }, func(c *Config) {
		bpConfig(c)
		c.Budget = budget
	})
	as := func(owner string) *peer {
		p := f.dial()
		require.Nil(t, p.call("Initialize", `{"owner":"`+owner+`"}`).Error)
		return p
	}
	a1, a2, b := as("A"), as("A"), as("B")

	// A's first connection does not read: its answers fill A's share.
	ids := []string{"h-1", "h-2", "h-3", "h-4"}
	f.holdAnswers(a1, bpQueue, ids...)
	require.Eventually(t, func() bool { return budget.Used() >= bpQueue }, 5*time.Second, time.Millisecond)
	assert.False(t, budget.Full(), "the budget itself has room")

	m := a2.call("Echo", `{}`)
	require.NotNil(t, m.Error, "A holds its whole share")
	assert.Equal(t, transport.StringOverloaded, m.Error.Data.StringCode)
	assert.Contains(t, m.Error.Data.Details, "one identity may hold 65536 bytes of the gateway's 131072")
	require.NotNil(t, m.Error.Data.Retry)

	assert.Nil(t, b.call("Echo", `{}`).Error, "B still gets budget")
	assert.Nil(t, b.call("Big", `{"n":10000}`).Error, "B may use its own share")
	assert.Nil(t, a2.call("_Keepalive", `{}`).Error, "keepalives are answered regardless")

	got := map[string]bool{}
	for range ids {
		m := a1.recv()
		assert.Nil(t, m.Error)
		got[*m.ID] = true
	}
	assert.Len(t, got, len(ids))
	require.Eventually(t, func() bool { return a2.call("Echo", `{}`).Error == nil }, 5*time.Second, 10*time.Millisecond,
		"A is served again once it read its answers")
}

// A lone identity may use its whole share, and a single answer larger than
// the share still goes out when the identity holds nothing else.
func TestBudgetShareLoneIdentity(t *testing.T) {
	budget := NewFairBudget(2*bpQueue, 0.1) // 13107 bytes per identity
	f := newFixtureWrapped(t, "pipe", func(h *testHandler) Handler { return ownerHandler{h} }, func(c *Config) {
		bpConfig(c)
		c.Budget = budget
	})
	p := f.dial()
	require.Nil(t, p.call("Initialize", `{"owner":"A"}`).Error)
	f.holdAnswers(p, int(budget.OwnerLimit()), "h-1", "h-2", "h-3")
	for range 3 {
		assert.Nil(t, p.recv().Error, "within the share")
	}
	require.Eventually(t, func() bool { return budget.Used() == 0 }, 5*time.Second, time.Millisecond)
	assert.Nil(t, p.call("Big", `{"n":15000}`).Error, "larger than the share, alone")
	require.Eventually(t, func() bool { return budget.Used() == 0 }, 5*time.Second, time.Millisecond)
}

// Shares are counted per owner and forgotten with the last connection:
// bytes move with a connection from the shared "" to its owner at
// Initialize, and nothing is left behind once all are gone.
func TestBudgetSharesJoinAndLeave(t *testing.T) {
	b := NewFairBudget(1000, 0.5)
	s1, s2 := b.Join("x"), b.Join("x")
	require.Same(t, s1, s2)
	s1.Add(400)
	assert.True(t, s1.Fits(100))
	assert.False(t, s1.Fits(101))
	assert.False(t, s1.Full())
	s1.Add(100)
	assert.True(t, s2.Full())
	assert.True(t, b.Join("y").Fits(500), "another owner has its own share")
	s1.Add(-500)
	s1.Leave()
	s2.Leave()
	b.mu.Lock()
	assert.Len(t, b.owners, 1, "only y is left")
	b.mu.Unlock()
	empty := b.Join("z")
	assert.True(t, empty.Fits(5000), "an owner holding nothing may take one frame of any size")
	var none *Share
	assert.True(t, none.Fits(1<<40))
	assert.False(t, none.Full())
	assert.Nil(t, (*Budget)(nil).Join("x"))
	assert.Zero(t, NewFairBudget(1000, 1).OwnerLimit())
	assert.Zero(t, NewFairBudget(0, 0.5).OwnerLimit())
}
