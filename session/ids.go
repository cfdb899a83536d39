package session

import "hash/maphash"

var idSeed = maphash.MakeSeed()

func hashID(id []byte) uint64 { return maphash.Bytes(idSeed, id) | 1 } // never 0: 0 marks a free slot

// idWindow detects reused request ids. Ids in flight are always known; the
// most recent completed ones are remembered in a bounded ring. Membership
// is a small open-addressing set of 64-bit hashes (a collision needs about
// 2^32 ids on one connection to become likely). Both grow only as a
// connection is used, so an idle connection costs a few bytes.
type idWindow struct {
	size   int      // completed ids remembered
	recent []uint64 // ring of completed ids, oldest at next once full
	next   int
	set    []uint64 // open addressing, linear probing; 0 = free
	count  int
}

func (w *idWindow) seen(h uint64) bool {
	if len(w.set) == 0 {
		return false
	}
	mask := len(w.set) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch w.set[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// begin records an id whose request is now in flight.
func (w *idWindow) begin(h uint64) { w.insert(h) }

// end moves an id from in flight to the recent ring.
func (w *idWindow) end(h uint64) { w.pushRecent(h) }

// remember records an id that completed at once (answered inline).
func (w *idWindow) remember(h uint64) {
	w.insert(h)
	w.pushRecent(h)
}

func (w *idWindow) pushRecent(h uint64) {
	if w.size == 0 {
		w.remove(h)
		return
	}
	if len(w.recent) < w.size {
		w.recent = append(w.recent, h)
		return
	}
	w.remove(w.recent[w.next])
	w.recent[w.next] = h
	w.next = (w.next + 1) % w.size
}

func (w *idWindow) insert(h uint64) {
	if (w.count+1)*2 > len(w.set) {
		w.grow()
	}
	mask := len(w.set) - 1
	i := int(h) & mask
	for w.set[i] != 0 {
		i = (i + 1) & mask
	}
	w.set[i] = h
	w.count++
}

// remove deletes h by backward-shift, so lookups need no tombstones.
func (w *idWindow) remove(h uint64) {
	if len(w.set) == 0 {
		return
	}
	mask := len(w.set) - 1
	i := int(h) & mask
	for w.set[i] != h {
		if w.set[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	w.count--
	for j := (i + 1) & mask; w.set[j] != 0; j = (j + 1) & mask {
		home := int(w.set[j]) & mask
		// Move set[j] into the hole at i when its probe path passes i.
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			w.set[i], i = w.set[j], j
		}
	}
	w.set[i] = 0
}

func (w *idWindow) grow() {
	old := w.set
	w.set = make([]uint64, max(16, 2*len(old)))
	w.count = 0
	for _, h := range old {
		if h != 0 {
			w.insert(h)
		}
	}
}
