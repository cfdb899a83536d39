package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// refillDelay is how long a run may go on before the pool is refilled
// beside it rather than after it.
const refillDelay = 25 * time.Millisecond

// Runner runs jobs in single-use sandboxes, at most Workers at a time, with
// a bounded queue and a pool of pre-started sandboxes. Safe for concurrent
// use.
type Runner struct {
	cfg     Config
	log     zerolog.Logger
	name    string // skillgate-<pid>-<random>: work dir and parent cgroup
	dir     string // WorkDir/name
	libDir  string // the Python runtime, bound read-only into every sandbox
	cgroups *cgroupTree
	seq     atomic.Uint64

	sem     chan struct{} // one token per running run
	queued  atomic.Int64
	running atomic.Int64

	pool        chan *sandbox // ready sandboxes
	refill      chan struct{}
	refillDone  chan struct{}
	landlockABI int

	mu        sync.Mutex
	closed    bool          // guarded by mu
	closing   chan struct{} // closed by Close
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// New checks that isolation works on this machine (it starts one sandbox
// and verifies it from the inside), then starts the warm pool. The error
// says exactly what is missing; the Runner never runs code unisolated.
func New(cfg Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := preflight(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.selfCheck(); err != nil {
		close(r.refillDone) // the refiller never started
		_ = r.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	r.log.Info().Int("workers", cfg.Workers).Int("warm_pool", cfg.WarmPool).
		Int("landlock_abi", r.landlockABI).Bool("cgroup_v2", r.cgroups.layout.v2).
		Str("python", cfg.Python).Msg("sandbox ready")
	if r.landlockABI == 0 {
		r.log.Warn().Msg("sandbox: Landlock unavailable; the filesystem relies on the mount namespace alone")
	}
	go r.refiller()
	return r, nil
}

// CheckIsolation starts one sandbox, verifies it and cleans up: the
// self-check of New, for a doctor-style command.
func CheckIsolation(cfg Config) error {
	cfg.WarmPool = 0
	r, err := New(cfg)
	if err != nil {
		return err
	}
	return r.Close()
}

func newRunner(cfg Config) (*Runner, error) {
	layout, err := loadCgroupLayout()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	r := &Runner{
		cfg:        cfg,
		log:        cfg.Logger,
		name:       cgroupPrefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:]),
		sem:        make(chan struct{}, cfg.Workers),
		pool:       make(chan *sandbox, max(cfg.WarmPool, 1)),
		refill:     make(chan struct{}, 1),
		refillDone: make(chan struct{}),
		closing:    make(chan struct{}),
	}
	if err := r.makeWorkDir(); err != nil {
		return nil, err
	}
	limits := cgroupLimits{memory: cfg.MemoryBytes, pids: cfg.Pids}
	if r.cgroups, err = newCgroupTree(layout, r.name, limits); err != nil {
		_ = os.RemoveAll(r.dir)
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	r.cgroups.sweepStale()
	return r, nil
}

// makeWorkDir creates WorkDir/<name> (traversable, not listable, by the
// sandboxes' uids), removes directories of dead Runners and installs the
// Python runtime.
func (r *Runner) makeWorkDir() error {
	if err := os.MkdirAll(r.cfg.WorkDir, 0o711); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	entries, _ := os.ReadDir(r.cfg.WorkDir)
	for _, e := range entries {
		if staleName(e.Name()) {
			_ = os.RemoveAll(filepath.Join(r.cfg.WorkDir, e.Name()))
		}
	}
	r.dir = filepath.Join(r.cfg.WorkDir, r.name)
	if err := os.Mkdir(r.dir, 0o711); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	for _, d := range []string{r.cfg.WorkDir, r.dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return fmt.Errorf("work dir: %w", err)
		}
	}
	r.libDir = filepath.Join(r.dir, "lib")
	if err := installRuntime(r.libDir); err != nil {
		_ = os.RemoveAll(r.dir)
		return fmt.Errorf("install the Python runtime: %w", err)
	}
	return nil
}

// Run runs job in a fresh sandbox and reports how it went. Its only errors
// are ErrOverloaded, ErrClosed and ctx.Err(); anything that goes wrong in
// the run is a failed Result. Cancelling ctx kills the run. When Run
// returns, the run's processes have been killed; the worker is released
// once they are reaped and the sandbox's cgroup and directory are gone.
func (r *Runner) Run(ctx context.Context, job Job) (*Result, error) {
	if !r.enter() {
		return nil, ErrClosed
	}
	defer r.wg.Done()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := newPlan(r.cfg, job)
	if err != nil {
		return failed(ErrTypeSandbox, err.Error()), nil
	}
	queued := time.Now()
	if err := r.acquire(ctx, job.Observer); err != nil {
		return nil, err
	}
	job.Observer.started(time.Since(queued))
	res, err := r.runAcquired(ctx, p)
	r.log.Debug().Str("run_id", job.RunID).Err(err).Func(func(e *zerolog.Event) {
		if res != nil {
			e.Str("status", res.Status).Dur("duration", res.Duration)
		}
	}).Msg("sandbox run")
	return res, err
}

// runAcquired runs p on a worker already taken; the worker is released by
// the teardown that follows in the background.
func (r *Runner) runAcquired(ctx context.Context, p *plan) (*Result, error) {
	sb, err := r.take()
	if err != nil {
		r.releaseSlot()
		if r.isClosing() {
			return nil, ErrClosed
		}
		return failed(ErrTypeSandbox, err.Error()), nil
	}
	// Starting a sandbox costs tens of CPU milliseconds: a short run should
	// not compete with the refill of its own slot, a long one should not
	// leave the pool empty for its whole length.
	refill := time.AfterFunc(refillDelay, r.kick)
	res, err := sb.run(ctx, r.closing, p, &r.cfg)
	refill.Stop()
	r.kick()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.teardown(sb)
		r.releaseSlot()
	}()
	return res, err
}

// enter registers a call unless the Runner is closed.
func (r *Runner) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

func (r *Runner) isClosing() bool {
	select {
	case <-r.closing:
		return true
	default:
		return false
	}
}

// acquire takes a worker, waiting in the queue when all are busy.
func (r *Runner) acquire(ctx context.Context, o *Observer) error {
	select {
	case r.sem <- struct{}{}:
		r.running.Add(1)
		o.admitted()
		return nil
	default:
	}
	if r.queued.Add(1) > int64(r.cfg.QueueSize) {
		r.queued.Add(-1)
		return ErrOverloaded
	}
	o.admitted()
	defer r.queued.Add(-1)
	select {
	case r.sem <- struct{}{}:
		r.running.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.closing:
		return ErrClosed
	}
}

func (r *Runner) releaseSlot() {
	r.running.Add(-1)
	<-r.sem
}

func (r *Runner) teardown(sb *sandbox) {
	if err := sb.teardown(); err != nil {
		r.log.Warn().Err(err).Str("sandbox", sb.id).Msg("sandbox teardown")
	}
}

// Stats returns the current load.
func (r *Runner) Stats() Stats {
	return Stats{Running: int(r.running.Load()), Queued: int(r.queued.Load()), WarmReady: len(r.pool)}
}

// Close kills every sandbox (runs in flight return ErrClosed), waits for
// them and removes the Runner's cgroups and directories. Idempotent.
func (r *Runner) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		close(r.closing)
		r.mu.Unlock()
		<-r.refillDone
		for len(r.pool) > 0 {
			r.teardown(<-r.pool)
		}
		r.wg.Wait()
		r.closeErr = errors.Join(r.cgroups.close(), os.RemoveAll(r.dir))
	})
	return r.closeErr
}
