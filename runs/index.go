package runs

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Bounds limit the finished records a gateway retains, besides
// Retention: per identity and in all, in count and in bytes (as the
// store keeps them). Past a bound the oldest finished records go first;
// runs in progress are never removed, nor counted.
type Bounds struct {
	MaxRecords      int
	MaxBytes        int64
	MaxOwnerRecords int
	MaxOwnerBytes   int64
}

// Default bounds: an identity keeps its last 1,000 runs, or 256 MiB of
// them (about 128 runs that each printed the 1 MiB log cap); the gateway
// 10,000 runs or 2 GiB.
const (
	DefaultMaxRecords      = 10_000
	DefaultMaxBytes        = 2 << 30
	DefaultMaxOwnerRecords = 1_000
	DefaultMaxOwnerBytes   = 256 << 20
)

func (b *Bounds) withDefaults() {
	b.MaxRecords = cmpOr(b.MaxRecords, DefaultMaxRecords)
	b.MaxBytes = cmpOr(b.MaxBytes, DefaultMaxBytes)
	b.MaxOwnerRecords = cmpOr(b.MaxOwnerRecords, DefaultMaxOwnerRecords)
	b.MaxOwnerBytes = cmpOr(b.MaxOwnerBytes, DefaultMaxOwnerBytes)
}

func cmpOr[T int | int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// entry is what the registry keeps in memory of a finished record: its
// summary and size. The events and the run object stay in the store and
// are read when a client asks for the run, so that what the registry
// holds does not grow with what the runs printed.
type entry struct {
	id, owner, what, status string
	started, finished       time.Time
	size                    int64
	// held is the whole record when the store could not save it: the
	// registry answers from memory rather than lose the run.
	held *Record
	gone bool // removed: skipped where an order list still holds it
}

func newEntry(rec *Record) *entry {
	size := rec.Size
	if size <= 0 {
		size = estimateSize(rec)
	}
	return &entry{id: rec.ID, owner: rec.Owner, what: rec.What, status: rec.Status,
		started: rec.StartedAt, finished: rec.FinishedAt, size: size}
}

// estimateSize is about what a record takes once encoded, for a store
// that does not tell.
func estimateSize(rec *Record) int64 {
	n := int64(len(rec.Result)+len(rec.Progress)) + 256
	for _, ev := range rec.Events {
		n += int64(len(ev.Data)) + eventOverhead
	}
	return n
}

func (e *entry) summary(now time.Time) Summary {
	return Summary{ID: e.id, Status: e.status, What: e.what, StartedAt: e.started, DurationMS: e.finished.Sub(e.started).Milliseconds()}
}

// usage is the count and bytes of the finished records of one identity,
// or of all, with their entries in finish order (oldest first). Removed
// entries stay in order until they reach its front or make up half of
// it.
type usage struct {
	count int
	bytes int64
	order []*entry
	gone  int // removed entries still in order
}

// oldest returns the oldest entry not removed, or nil.
func (u *usage) oldest() *entry {
	for len(u.order) > 0 && u.order[0].gone {
		u.order[0] = nil
		u.order = u.order[1:]
		u.gone--
	}
	if len(u.order) == 0 {
		return nil
	}
	return u.order[0]
}

func (u *usage) add(e *entry) {
	u.count++
	u.bytes += e.size
	u.order = append(u.order, e)
}

func (u *usage) remove(e *entry) {
	u.count--
	u.bytes -= e.size
	if u.gone++; u.gone > 64 && u.gone > len(u.order)/2 {
		u.order = slices.DeleteFunc(u.order, func(e *entry) bool { return e.gone })
		u.gone = 0
	}
}

// addLocked indexes a finished record and removes the oldest finished
// records past the bounds, which it returns for the store to delete.
func (g *Registry) addLocked(e *entry) []*entry {
	g.index[e.id] = e
	own := g.owners[e.owner]
	if own == nil {
		own = &usage{}
		g.owners[e.owner] = own
	}
	own.add(e)
	g.all.add(e)
	b := g.cfg.Bounds
	var out []*entry
	for own.count > b.MaxOwnerRecords || own.bytes > b.MaxOwnerBytes {
		out = append(out, g.removeLocked(own.oldest()))
	}
	for g.all.count > b.MaxRecords || g.all.bytes > b.MaxBytes {
		out = append(out, g.removeLocked(g.all.oldest()))
	}
	return out
}

// removeLocked forgets an indexed entry.
func (g *Registry) removeLocked(e *entry) *entry {
	e.gone = true
	delete(g.index, e.id)
	g.all.remove(e)
	if own := g.owners[e.owner]; own != nil {
		if own.remove(e); own.count == 0 {
			delete(g.owners, e.owner)
		}
	}
	return e
}

// forget deletes removed records from the store (one held in memory may
// have an older version there). A shared store's records are removed by
// its sweep, whoever ran them; the registry indexes only those it could
// not save there.
func (g *Registry) forget(gone []*entry, why string) {
	if g.sharedStore() != nil {
		return
	}
	for _, e := range gone {
		if err := g.cfg.Store.Delete(context.Background(), e.id); err != nil {
			g.cfg.Logger.Warn().Err(err).Str("run_id", e.id).Msg("cannot delete " + why)
		}
	}
}

// open returns the finished run of an entry, read from the store.
func (g *Registry) open(e *entry) (*Run, error) {
	if e.held != nil {
		return loaded(g, e.held), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rec, err := g.cfg.Store.Load(ctx, e.owner, e.id)
	if err != nil {
		return nil, err
	}
	if rec.Owner != e.owner {
		return nil, fmt.Errorf("%s: %w", e.id, ErrNotFound)
	}
	return loaded(g, rec), nil
}
