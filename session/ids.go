package session

import "hash/maphash"

var idSeed = maphash.MakeSeed()

func hashID(id []byte) uint64 { return maphash.Bytes(idSeed, id) }

// idWindow detects reused request ids: ids in flight are always known, and
// the most recent completed ones are remembered in a bounded ring that grows
// only as a connection is used. Ids are kept as 64-bit hashes; a collision
// would need about 2^32 ids on one connection to become likely.
type idWindow struct {
	inflight []uint64
	recent   []uint64
	next     int // ring position of the oldest entry once recent is full
	size     int
}

func (w *idWindow) seen(h uint64) bool {
	for _, v := range w.inflight {
		if v == h {
			return true
		}
	}
	for _, v := range w.recent {
		if v == h {
			return true
		}
	}
	return false
}

// begin records an id whose request is now in flight.
func (w *idWindow) begin(h uint64) { w.inflight = append(w.inflight, h) }

// end moves an id from in flight to the recent ring.
func (w *idWindow) end(h uint64) {
	for i, v := range w.inflight {
		if v == h {
			last := len(w.inflight) - 1
			w.inflight[i] = w.inflight[last]
			w.inflight = w.inflight[:last]
			break
		}
	}
	w.remember(h)
}

// remember adds an id to the recent ring, evicting the oldest when full.
func (w *idWindow) remember(h uint64) {
	if w.size == 0 {
		return
	}
	if len(w.recent) < w.size {
		w.recent = append(w.recent, h)
		return
	}
	w.recent[w.next] = h
	w.next = (w.next + 1) % w.size
}
