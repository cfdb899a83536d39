package session

import (
	"math/rand/v2"
	"testing"
)

// Removing an id from the set moves later ids of its run back into the
// hole only when their probe path passes it. Runs that wrap past the end
// of the table are where that test differs from a plain comparison: ids
// here have home slots 12 to 15 and 0 to 3 of the 16-slot table (at most 8
// in flight, so the table never grows), each run removed in every order.
func TestIDWindowRemoveWrapsAround(t *testing.T) {
	homes := []uint64{12, 13, 14, 15, 0, 1, 2, 3}
	for seed := range uint64(200) {
		w := idWindow{} // size 0: end removes the id at once
		r := rand.New(rand.NewPCG(seed, 7))
		inflight := map[uint64]bool{}
		var gone []uint64
		next := uint64(1)
		for step := range 400 {
			if len(inflight) < 8 && (len(inflight) == 0 || r.IntN(2) == 0) {
				h := next<<8 | homes[r.IntN(len(homes))]
				next++
				if w.seen(h) {
					t.Fatalf("seed %d step %d: new id %#x already seen", seed, step, h)
				}
				w.begin(h)
				inflight[h] = true
			} else {
				for h := range inflight {
					delete(inflight, h)
					w.end(h)
					gone = append(gone, h)
					break
				}
			}
			if len(w.set) != 16 {
				t.Fatalf("seed %d step %d: table of %d slots, want 16", seed, step, len(w.set))
			}
			for h := range inflight {
				if !w.seen(h) {
					t.Fatalf("seed %d step %d: in-flight id %#x (home %d) lost", seed, step, h, h&15)
				}
			}
			for _, h := range gone[max(0, len(gone)-16):] {
				if w.seen(h) {
					t.Fatalf("seed %d step %d: removed id %#x still seen", seed, step, h)
				}
			}
		}
	}
}
