package runs

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/internal/runerror"
)

// Config configures a Registry. Zero fields take DefaultConfig's values.
type Config struct {
	// Store keeps records across restarts; nil keeps them in memory.
	Store Store
	// Retention is how long a finished run stays readable.
	Retention time.Duration
	// MaxEvents and MaxEventBytes bound the events retained per run: at
	// least the last MaxEvents events or MaxEventBytes bytes of them.
	MaxEvents     int
	MaxEventBytes int
	// MaxLogBytes bounds the full logs kept per run (logs_blob).
	MaxLogBytes int

	// Bounds limit the finished records retained; zero fields take the
	// defaults.
	Bounds Bounds

	Logger zerolog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// CheckpointInterval, StaleAfter, SweepInterval and
	// CancelPollInterval apply to a SharedStore (see there).
	CheckpointInterval time.Duration
	StaleAfter         time.Duration
	SweepInterval      time.Duration
	CancelPollInterval time.Duration
}

// Defaults. MaxEventBytes holds a run's whole log (1 MiB, the sandbox's
// cap; log events count the bytes written, not their JSON) with room for
// the other events.
const (
	DefaultRetention     = time.Hour
	DefaultMaxEvents     = 1000
	DefaultMaxEventBytes = 2 << 20
	DefaultMaxLogBytes   = 1 << 20
)

func (c *Config) withDefaults() {
	if c.Store == nil {
		c.Store = NewMemoryStore()
	}
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.MaxEvents = cmp.Or(c.MaxEvents, DefaultMaxEvents)
	c.MaxEventBytes = cmp.Or(c.MaxEventBytes, DefaultMaxEventBytes)
	c.MaxLogBytes = cmp.Or(c.MaxLogBytes, DefaultMaxLogBytes)
	c.Bounds.withDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	c.CheckpointInterval = cmp.Or(c.CheckpointInterval, DefaultCheckpointInterval)
	c.StaleAfter = cmp.Or(c.StaleAfter, DefaultStaleAfter)
	c.SweepInterval = cmp.Or(c.SweepInterval, DefaultSweepInterval)
	c.CancelPollInterval = cmp.Or(c.CancelPollInterval, DefaultCancelPollInterval)
}

// Registry holds the runs of a gateway. Safe for concurrent use.
type Registry struct {
	cfg Config

	mu   sync.Mutex
	runs map[string]*Run // guarded by mu; the runs in progress here
	// index holds a summary of each retained finished record (of a
	// shared store, only those it could not save). all and owners count
	// them, in the order they finished, which is the order they expire
	// in (one Retention for all) and leave past a bound: prune and the
	// bounds look at the front, not at every retained run. Guarded by mu.
	index  map[string]*entry
	all    usage
	owners map[string]*usage

	stopLoops context.CancelFunc // nil without a SharedStore
	loops     sync.WaitGroup
}

// Open returns a registry holding the records of cfg.Store that are still
// within retention. Records of runs that were in progress when the
// previous process ended are finished as interrupted.
func Open(ctx context.Context, cfg Config) (*Registry, error) {
	cfg.withDefaults()
	g := &Registry{cfg: cfg, runs: map[string]*Run{}, index: map[string]*entry{}, owners: map[string]*usage{}}
	if g.sharedStore() != nil {
		// Other replicas' runs are read when asked for, not all at once.
		g.startShared()
		return g, nil
	}
	// Only summaries are read: a record's events and run object are read
	// again when a client asks for the run.
	recs, err := cfg.Store.LoadAll(ctx)
	if err != nil {
		g.cfg.Logger.Warn().Err(err).Msg("some run records could not be read")
	}
	if recs == nil && err != nil {
		return nil, err
	}
	now := g.now()
	entries := make([]*entry, 0, len(recs))
	for _, rec := range recs {
		var held *Record
		if rec.Status == StatusRunning {
			if rec, held = g.interruptStored(ctx, rec, now); rec == nil {
				continue
			}
		}
		if now.Sub(rec.FinishedAt) > cfg.Retention {
			_ = cfg.Store.Delete(ctx, rec.ID)
			continue
		}
		e := newEntry(rec)
		e.held = held
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *entry) int { return a.finished.Compare(b.finished) })
	var gone []*entry
	for _, e := range entries {
		gone = append(gone, g.addLocked(e)...)
	}
	g.forget(gone, "a run record past the bounds")
	return g, nil
}

// interruptStored finishes, and saves again, the stored record of a run
// the previous process lost. It returns the record's summary, and the
// record itself when it could not be saved; nil when it cannot be read.
func (g *Registry) interruptStored(ctx context.Context, head *Record, now time.Time) (rec, held *Record) {
	rec, err := g.cfg.Store.Load(ctx, head.Owner, head.ID)
	if err != nil {
		g.cfg.Logger.Warn().Err(err).Str("run_id", head.ID).Msg("cannot read the interrupted run")
		return nil, nil
	}
	interrupt(rec, now)
	if err := g.cfg.Store.Save(ctx, rec); err != nil {
		g.cfg.Logger.Warn().Err(err).Str("run_id", rec.ID).Msg("cannot save the interrupted run")
		return rec, rec
	}
	return rec, nil
}

func (g *Registry) now() time.Time { return g.cfg.Now() }

// loaded makes a finished Run of a stored record.
func loaded(g *Registry, rec *Record) *Run {
	r := &Run{reg: g, rec: *rec, wake: make(chan struct{}), done: make(chan struct{})}
	close(r.done)
	r.logs.stopped = true
	if n := len(rec.Events); n > 0 {
		r.nextSeq = rec.Events[n-1].Seq
	}
	return r
}

// interrupt finishes the record of a run the gateway lost.
func interrupt(rec *Record, now time.Time) {
	msg := "the gateway stopped while the run was in progress; its result is unknown"
	rec.Status, rec.FinishedAt = StatusFailed, now
	rec.Result, _ = json.Marshal(map[string]any{
		"status": StatusFailed, "run_id": rec.ID, "summary": rec.What + " was interrupted: " + msg + "; run it again.",
		"output_blobs": []string{}, "logs_preview": "",
		"error":       map[string]string{"type": runerror.Interrupted, "message": msg},
		"retry":       map[string]int{"suggested_delay_ms": runerror.RetryDelayMS, "max_attempts": runerror.RetryAttempts},
		"duration_ms": rec.durationMS(now),
	})
	var seq uint64
	if n := len(rec.Events); n > 0 {
		seq = rec.Events[n-1].Seq
	}
	raw, _ := json.Marshal(map[string]string{"status": StatusFailed})
	rec.Events = append(rec.Events, Event{Seq: seq + 1, Type: EventFinished, Data: raw})
}

// NewID returns a fresh run id: "run_" and 16 hex digits.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}

// Start registers a running run. cancel, called by Run.Cancel with
// ErrCanceled, should stop it; the run's record is saved at once, so that
// a restart reports it as interrupted.
func (g *Registry) Start(id, owner, what, requestID string, cancel context.CancelCauseFunc) *Run {
	r := &Run{reg: g, cancel: cancel, wake: make(chan struct{}), done: make(chan struct{})}
	r.rec = Record{ID: id, Owner: owner, What: what, RequestID: requestID, Status: StatusRunning, StartedAt: g.now()}
	g.prune()
	g.mu.Lock()
	g.runs[id] = r
	g.mu.Unlock()
	_ = g.saveRun(r, r.Record()) // logged; the record is kept in memory meanwhile
	return r
}

// Discard forgets a run that never began (the sandbox queue refused it).
func (g *Registry) Discard(r *Run) {
	g.mu.Lock()
	delete(g.runs, r.rec.ID)
	g.mu.Unlock()
	if err := g.cfg.Store.Delete(context.Background(), r.rec.ID); err != nil {
		g.cfg.Logger.Warn().Err(err).Str("run_id", r.rec.ID).Msg("cannot delete a run record")
	}
}

// finished saves a finished run's record and hands it from the runs in
// progress to the index: from now on it is read from the store.
func (g *Registry) finished(r *Run, rec *Record) {
	err := g.saveRun(r, rec)
	shared := g.sharedStore() != nil
	var gone []*entry
	g.mu.Lock()
	if g.runs[rec.ID] == r {
		delete(g.runs, rec.ID)
	}
	if err != nil || !shared {
		e := newEntry(rec)
		if err != nil {
			e.held = rec
		}
		gone = g.addLocked(e)
	}
	g.mu.Unlock()
	g.forget(gone, "a run record past the bounds")
}

func (g *Registry) save(rec *Record) error {
	err := g.cfg.Store.Save(context.Background(), rec)
	if err != nil {
		g.cfg.Logger.Warn().Err(err).Str("run_id", rec.ID).Msg("cannot save a run record")
	}
	return err
}

// Get returns owner's run id. Another identity's run is ErrNotFound, like
// an unknown one.
func (g *Registry) Get(owner, id string) (*Run, error) {
	g.mu.Lock()
	r, e := g.runs[id], g.index[id]
	g.mu.Unlock()
	switch {
	case r != nil && r.rec.Owner == owner:
		return r, nil
	case r != nil:
	case e != nil && e.owner == owner && !g.expired(e):
		return g.open(e)
	case e == nil && g.sharedStore() != nil:
		return g.getShared(owner, id)
	}
	return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
}

func (g *Registry) expired(e *entry) bool {
	return g.now().Sub(e.finished) > g.cfg.Retention
}

// prune forgets the finished runs past retention: those at the front of
// the finish order, so that a Start costs the same with a million runs
// retained as with none.
func (g *Registry) prune() {
	g.mu.Lock()
	var gone []*entry
	for e := g.all.oldest(); e != nil && g.expired(e); e = g.all.oldest() {
		gone = append(gone, g.removeLocked(e))
	}
	g.mu.Unlock()
	g.forget(gone, "an expired run record")
}

// Summary is one entry of List.
type Summary struct {
	ID         string    `json:"run_id"`
	Status     string    `json:"status"`
	What       string    `json:"what"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	// Owner is set by ListAll only: a caller of List knows the owner.
	Owner string `json:"identity,omitempty"`
}

// AllOwners, given to List as the owner, lists the runs of every
// identity that this replica holds (its runs in progress and the finished
// records it indexes), each Summary naming its Owner. Other replicas' runs
// in a shared store are not read: that store is listed per owner.
const AllOwners = "\x00all"

// Owner returns the identity that owns run id, as far as this replica
// knows (a run in progress here or a finished record it indexes).
func (g *Registry) Owner(id string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.runs[id]; r != nil {
		return r.rec.Owner, true
	}
	if e := g.index[id]; e != nil && !g.expired(e) {
		return e.owner, true
	}
	return "", false
}

// List returns owner's runs, newest first, filtered by status ("running",
// "finished" or "" for all), at most limit of them, starting after cursor
// (empty: from the newest). next is the cursor of the following page, or
// empty at the end.
func (g *Registry) List(owner, status string, limit int, cursor string) (page []Summary, next string, err error) {
	after, err := parseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	g.prune()
	all := g.summaries(owner, status)
	if g.sharedStore() != nil && owner != AllOwners {
		if all, err = g.sharedSummaries(owner, status, all); err != nil {
			return nil, "", err
		}
	}
	slices.SortFunc(all, newestFirst)
	start := 0
	if cursor != "" {
		start, _ = slices.BinarySearchFunc(all, after, newestFirst)
		if start < len(all) && all[start].ID == after.ID {
			start++
		}
	}
	page = all[start:min(len(all), start+limit)]
	if start+limit < len(all) {
		last := page[len(page)-1]
		next = strconv.FormatInt(last.StartedAt.UnixNano(), 10) + "." + last.ID
	}
	return page, next, nil
}

func (g *Registry) summaries(owner, status string) []Summary {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Summary
	for _, r := range g.runs {
		r.mu.Lock()
		rec := &r.rec
		running := rec.Status == StatusRunning
		if (rec.Owner == owner || owner == AllOwners) && (status == "" || (status == StatusRunning) == running) {
			out = append(out, Summary{ID: rec.ID, Status: rec.Status, What: rec.What, StartedAt: rec.StartedAt, DurationMS: rec.durationMS(now)})
			if owner == AllOwners {
				out[len(out)-1].Owner = rec.Owner
			}
		}
		r.mu.Unlock()
	}
	own := g.owners[owner]
	if owner == AllOwners {
		own = &g.all
	}
	if own != nil && status != StatusRunning {
		for _, e := range own.order {
			if !e.gone {
				s := e.summary(now)
				if owner == AllOwners {
					s.Owner = e.owner
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func newestFirst(a, b Summary) int {
	if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

func parseCursor(cursor string) (Summary, error) {
	if cursor == "" {
		return Summary{}, nil
	}
	ns, id, ok := strings.Cut(cursor, ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || !validID(id) {
		return Summary{}, fmt.Errorf("%q: %w", cursor, ErrBadCursor)
	}
	return Summary{ID: id, StartedAt: time.Unix(0, n)}, nil
}
