package runs

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// SharedStore is a Store that several gateway replicas use at once (the
// objects of a shared blob store), so that any replica answers for any
// run. With one, the registry loads nothing at Open: it reads another
// replica's run from the store when asked, checkpoints its own running
// runs there (Config.CheckpointInterval), and sweeps expired records with
// SweepInterval instead of deleting them one by one.
//
// Each run's record is written by the one replica running it, so
// replicas never write the same record at once; Sweep may run on every
// replica together.
type SharedStore interface {
	Store
	// List returns owner's records without their events.
	List(ctx context.Context, owner string) ([]*Record, error)
	// Sweep deletes the records last saved before cutoff, then the
	// oldest finished records past b, and returns how many; and the
	// cancel requests made before cutoff. A record deleted by another
	// replica first is no error.
	Sweep(ctx context.Context, cutoff time.Time, b Bounds) (int, error)
	// RequestCancel asks the replica running owner's run id to cancel
	// it: a cancel_run that reached another replica. It is kept apart
	// from the record, which only the running replica writes.
	RequestCancel(ctx context.Context, owner, id string) error
	// CancelRequests returns the ids of the runs whose cancel was
	// requested and not cleared since.
	CancelRequests(ctx context.Context) ([]string, error)
	// ClearCancel removes the cancel request of run id, if any.
	ClearCancel(ctx context.Context, id string) error
}

// Shared-store defaults. A running run is saved when it has news, at most
// once per CheckpointInterval, and at least once per heartbeatEvery so
// that readers can tell a live run from one whose replica died: a
// running record not saved for StaleAfter is reported interrupted.
const (
	DefaultCheckpointInterval = 2 * time.Second
	DefaultStaleAfter         = time.Minute
	DefaultSweepInterval      = time.Minute
	// DefaultCancelPollInterval keeps a cancel_run made on another
	// replica within 2 s of stopping the run: the request is seen within
	// it, and the sandbox kills a run within moments. A replica with no
	// run in progress does not poll.
	DefaultCancelPollInterval = 500 * time.Millisecond
	heartbeatEvery            = 10 * time.Second
	storeTimeout              = 30 * time.Second
)

// ValidID reports whether id has the form NewID makes.
func ValidID(id string) bool { return validID(id) }

// sharedRun is what a Run keeps for a shared store.
type sharedRun struct {
	saveMu  sync.Mutex // orders the saves of one run: a checkpoint never lands after Finish's save
	remote  bool       // loaded from the store: another replica runs it
	savedAt time.Time  // guarded by saveMu
	saved   savedMark  // guarded by saveMu
}

// savedMark tells whether a record changed since it was saved.
type savedMark struct {
	seq      uint64
	progress string
}

func (g *Registry) sharedStore() SharedStore {
	s, _ := g.cfg.Store.(SharedStore)
	return s
}

// startShared starts the checkpoint and sweep loops of a shared store.
func (g *Registry) startShared() {
	ctx, cancel := context.WithCancel(context.Background())
	g.stopLoops = cancel
	g.loops.Add(3)
	go g.every(ctx, g.cfg.CheckpointInterval, g.checkpoint)
	go g.every(ctx, g.cfg.SweepInterval, g.sweep)
	go g.every(ctx, g.cfg.CancelPollInterval, g.pollCancels)
}

// pollCancels cancels the runs of this replica that a cancel_run on
// another replica asked to stop, and clears their requests. Requests for
// runs of other replicas are theirs to clear.
func (g *Registry) pollCancels(ctx context.Context) {
	running := g.local(true)
	if len(running) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ids, err := g.sharedStore().CancelRequests(ctx)
	if err != nil {
		g.cfg.Logger.Warn().Err(err).Msg("cannot read the cancel requests of other replicas; the next poll tries again")
		return
	}
	if len(ids) == 0 {
		return
	}
	g.mu.Lock()
	var mine []*Run
	for _, id := range ids {
		if r := g.runs[id]; r != nil && !r.shared.remote {
			mine = append(mine, r)
		}
	}
	g.mu.Unlock()
	for _, r := range mine {
		r.Cancel()
		if err := g.sharedStore().ClearCancel(ctx, r.rec.ID); err != nil {
			g.cfg.Logger.Warn().Err(err).Str("run_id", r.rec.ID).Msg("cannot clear a cancel request")
		}
	}
}

// requestCancel records a cancel of a run in progress on another replica.
func (r *Run) requestCancel() {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.reg.sharedStore().RequestCancel(ctx, r.rec.Owner, r.rec.ID); err != nil {
		r.reg.cfg.Logger.Warn().Err(err).Str("run_id", r.rec.ID).Msg("cannot ask another replica to cancel a run")
	}
}

func (g *Registry) every(ctx context.Context, d time.Duration, f func(context.Context)) {
	defer g.loops.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// Close stops the registry's background work. Runs still in progress are
// not finished by it: call WaitIdle first.
func (g *Registry) Close() {
	if g.stopLoops != nil {
		g.stopLoops()
		g.loops.Wait()
	}
}

// WaitIdle waits until no run started here is in progress, or ctx ends.
func (g *Registry) WaitIdle(ctx context.Context) error {
	for _, r := range g.local(true) {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// local returns the runs this replica holds; with running, only those in
// progress here.
func (g *Registry) local(running bool) []*Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Run, 0, len(g.runs))
	for _, r := range g.runs {
		if running && r.isDone() {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (r *Run) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// checkpoint saves the running runs that changed since their last save,
// and the others once per heartbeat.
func (g *Registry) checkpoint(context.Context) {
	for _, r := range g.local(true) {
		r.shared.saveMu.Lock()
		mark, running := r.mark()
		if running && (mark != r.shared.saved || g.now().Sub(r.shared.savedAt) >= g.heartbeat()) {
			_ = g.saveLocked(r, r.Record(), mark) // logged; the next checkpoint tries again
		}
		r.shared.saveMu.Unlock()
	}
}

// mark tells what a save of the run would hold, without copying it.
func (r *Run) mark() (savedMark, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return savedMark{seq: r.nextSeq, progress: string(r.rec.Progress)}, r.rec.Status == StatusRunning
}

// heartbeat is how often an unchanged running record is saved: well
// within the time after which readers call it stale, and within
// retention, since the sweep goes by when a record was last saved.
func (g *Registry) heartbeat() time.Duration {
	return min(heartbeatEvery, g.cfg.StaleAfter/3, g.cfg.Retention/2)
}

// saveRun saves a run's record; saves of one run never overtake each
// other.
func (g *Registry) saveRun(r *Run, rec *Record) error {
	r.shared.saveMu.Lock()
	defer r.shared.saveMu.Unlock()
	var seq uint64
	if n := len(rec.Events); n > 0 {
		seq = rec.Events[n-1].Seq
	}
	return g.saveLocked(r, rec, savedMark{seq: seq, progress: string(rec.Progress)})
}

func (g *Registry) saveLocked(r *Run, rec *Record, mark savedMark) error {
	now := g.now()
	rec.Updated = now
	err := g.save(rec)
	r.shared.savedAt, r.shared.saved = now, mark
	return err
}

// sweep deletes the shared records past retention; every replica does,
// which only repeats the work.
func (g *Registry) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	n, err := g.sharedStore().Sweep(ctx, g.now().Add(-g.cfg.Retention), g.cfg.Bounds)
	if err != nil {
		g.cfg.Logger.Warn().Err(err).Msg("run record sweep failed; the next one tries again")
	}
	if n > 0 {
		g.cfg.Logger.Debug().Int("removed", n).Msg("expired run records removed")
	}
}

// getShared reads owner's run id from the shared store: a finished run,
// or one in progress on another replica, which the returned Run follows
// by reading the store again every CheckpointInterval.
func (g *Registry) getShared(owner, id string) (*Run, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rec, err := g.sharedStore().Load(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	g.settle(rec)
	if rec.Owner != owner || rec.Status != StatusRunning && g.now().Sub(rec.FinishedAt) > g.cfg.Retention {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	r := loaded(g, rec)
	if rec.Status == StatusRunning {
		r.done = make(chan struct{})
		r.shared.remote = true
	}
	return r, nil
}

// settle finishes, in the copy read, a running record whose replica
// stopped saving it: that replica is gone and the run with it.
func (g *Registry) settle(rec *Record) {
	if rec.Status == StatusRunning && g.now().Sub(rec.Updated) > g.cfg.StaleAfter {
		interrupt(rec, rec.Updated)
	}
}

// remotePoll is a channel that fires when a run of another replica is due
// to be read again; nil (never) for the runs of this replica.
func (r *Run) remotePoll() <-chan time.Time {
	if !r.shared.remote || r.isDone() {
		return nil
	}
	return time.After(r.reg.cfg.CheckpointInterval)
}

// refresh reads a remote run's record again and wakes its followers.
func (r *Run) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, err := r.reg.sharedStore().Load(ctx, r.rec.Owner, r.rec.ID)
	if err != nil {
		return // gone or unreadable: keep what was read
	}
	r.reg.settle(rec)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.isDone() {
		return
	}
	r.rec = *rec
	if n := len(rec.Events); n > 0 {
		r.nextSeq = rec.Events[n-1].Seq
	}
	close(r.wake)
	r.wake = make(chan struct{})
	if rec.Status != StatusRunning {
		close(r.done)
	}
}

// sharedSummaries adds the runs of other replicas to the local ones; a
// run found in both is taken from here.
func (g *Registry) sharedSummaries(owner, status string, local []Summary) ([]Summary, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	recs, err := g.sharedStore().List(ctx, owner)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(local))
	for _, s := range local {
		seen[s.ID] = true
	}
	now := g.now()
	for _, rec := range recs {
		g.settle(rec)
		running := rec.Status == StatusRunning
		switch {
		case seen[rec.ID] || rec.Owner != owner:
		case !running && now.Sub(rec.FinishedAt) > g.cfg.Retention:
		case status == "" || (status == StatusRunning) == running:
			local = append(local, Summary{ID: rec.ID, Status: rec.Status, What: rec.What, StartedAt: rec.StartedAt, DurationMS: rec.durationMS(now)})
		}
	}
	return local, nil
}
