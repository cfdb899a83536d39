package session

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// The set agrees with a map model under random begin/end/remember
// sequences, including heavy collisions of the low bits.
func TestIDWindowModel(t *testing.T) {
	for _, size := range []int{0, 1, 4, 256} {
		w := idWindow{size: size}
		inflight := map[uint64]bool{}
		var recent []uint64
		r := rand.New(rand.NewPCG(1, uint64(size)))
		next := uint64(1)
		for step := range 20000 {
			h := (next << 20) | 1 // same low bits: worst case for probing
			if step%3 == 0 {
				h = r.Uint64() | 1
			}
			next++
			switch op := r.IntN(3); {
			case op == 0 || len(inflight) == 0:
				require.False(t, w.seen(h))
				w.begin(h)
				inflight[h] = true
			case op == 1:
				for k := range inflight {
					delete(inflight, k)
					w.end(k)
					recent = append(recent, k)
					break
				}
			default:
				w.remember(h)
				recent = append(recent, h)
			}
			if len(recent) > size {
				recent = recent[len(recent)-size:]
			}
			// Plain checks: testify's per-call cost would make this
			// loop of millions of checks take many seconds.
			for k := range inflight {
				if !w.seen(k) {
					t.Fatalf("in-flight id forgotten at step %d", step)
				}
			}
			for _, k := range recent {
				if !w.seen(k) {
					t.Fatalf("recent id forgotten at step %d", step)
				}
			}
			if w.count != len(inflight)+len(recent) {
				t.Fatalf("count %d, want %d at step %d", w.count, len(inflight)+len(recent), step)
			}
		}
	}
}

func BenchmarkIDWindow(b *testing.B) {
	w := idWindow{size: DefaultRecentIDs}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h := uint64(i)*0x9e3779b97f4a7c15 | 1
		if w.seen(h) {
			b.Fatal("false positive")
		}
		w.remember(h)
	}
}

// The documented id bound is 1024 bytes: an id of exactly that length is
// served and echoed whole, one byte more aborts the connection.
func TestIDLengthBoundary(t *testing.T) {
	require.Equal(t, 1024, MaxIDLen, "the documented limit")
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	id := strings.Repeat("i", 1024)
	p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `"}`)
	m := p.recv()
	require.NotNil(t, m.ID)
	assert.Equal(t, id, *m.ID)
	assert.Nil(t, m.Error)

	p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"` + id + `j"}`)
	m = p.expectAbort(transport.CodeInvalidRequest, transport.StringInvalidRequest)
	assert.Contains(t, m.CloseError.Error.Data.Details, "1024 bytes")
}

// A refused request's id counts as used: the peer may not reuse it, as
// with any other request.
func TestRefusedIDIsUsed(t *testing.T) {
	f := newFixture(t, "pipe", nil)
	p := f.dial()
	p.send(`{"jsonrpc":"2.0","method":"Echo","params":{},"id":"early"}`)
	m := p.recv()
	require.NotNil(t, m.Error, "refused before Initialize")
	assert.Equal(t, transport.StringMethodNotFound, m.Error.Data.StringCode)
	p.send(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"early"}`)
	m = p.expectAbort(transport.CodeInvalidRequest, transport.StringInvalidRequest)
	assert.Contains(t, m.CloseError.Error.Data.Details, "already used")
}
