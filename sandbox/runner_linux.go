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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/cgroup"
	"github.com/skillgate/skillgate/sandbox/internal/pid1"
)

// refillDelay is how long a run may go on before the pool is refilled
// beside it rather than after it.
const refillDelay = 25 * time.Millisecond

// Runner runs jobs in single-use sandboxes, at most Workers at a time, with
// a bounded queue and a pool of pre-started sandboxes. Safe for concurrent
// use.
type Runner struct {
	cfg     Config
	hooks   testHooks
	mode    Mode // root or rootless
	ids     *idMapper
	log     zerolog.Logger
	name    string       // skillgate-<pid>-<random>: work dir and parent cgroup
	dir     string       // WorkDir/name
	libDir  string       // the Python runtime, bound read-only into every sandbox
	etcDir  string       // the runs' /etc (systemview.go), bound read-only into every sandbox
	cgroups *cgroup.Tree // nil: rlimits stand in (rootless without a writable cgroup)
	// cgroupErr says why no cgroup could be used (rootless only).
	cgroupErr   error
	enforcement Enforcement
	seq         atomic.Uint64

	sem     chan struct{} // one token per running run
	queued  atomic.Int64
	running atomic.Int64

	// The templates, when sandboxes are forked from them (templateOn): one
	// per environment in use (templates_linux.go).
	templateOn       bool
	tmu              sync.Mutex
	templates        map[string]*templateEntry // by Environment.Key, guarded by tmu
	tick             uint64                    // guarded by tmu
	warmEnv          Environment               // the warm pool's, guarded by tmu
	templateRestarts atomic.Int64
	templateSeccomp  string
	templateLandlock pid1.LandlockSpec

	// poolSize is WarmPool cut to WarmMemoryBytes by the measured
	// warmBytes of one warm sandbox.
	poolSize  atomic.Int64
	warmBytes atomic.Int64

	pool chan *sandbox // ready sandboxes
	// starts counts the pool sandboxes starting: the refiller's and
	// those of runs that found the pool empty (awaitStart).
	starts *startGate
	// waiting counts the runs waiting for a pool sandbox to start.
	waiting    atomic.Int64
	refill     chan struct{}
	refillDone chan struct{}
	// ahead holds a template sandbox's directory and cgroup made before
	// its start (see prepareFromAhead); aheadBusy: one is being made.
	ahead       chan prepared
	aheadBusy   atomic.Bool
	spareDirs   chan string // emptied template sandbox directories (see removeDir)
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
func New(cfg Config) (*Runner, error) { return newHooked(cfg, testHooks{}) }

// newHooked is New with the tests' hooks.
func newHooked(cfg Config, hooks testHooks) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	mode, err := resolveMode(cfg.Mode, os.Geteuid())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	check := preflight
	if mode == ModeRootless {
		check = preflightRootless
	}
	if err := check(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %s mode: %w", ErrUnsupported, mode, err)
	}
	ids, err := newIDMapper(&cfg, mode)
	if err != nil {
		return nil, fmt.Errorf("%w: %s mode: %w", ErrUnsupported, mode, err)
	}
	r, err := newRunner(cfg, mode, hooks)
	if err != nil {
		return nil, err
	}
	r.ids = ids
	if err := r.checkTemplate(); err != nil {
		close(r.refillDone) // the refiller never started
		_ = r.Close()
		return nil, fmt.Errorf("%w: %s mode: %w", ErrUnsupported, mode, err)
	}
	r.enforcement = r.describe()
	r.logReady()
	go r.refiller()
	return r, nil
}

// logReady states at start-up what enforces each limit and what does not.
func (r *Runner) logReady() {
	ev := r.log.Info().Int("workers", r.cfg.Workers).Int("warm_pool", r.cfg.WarmPool).
		Int("landlock_abi", r.landlockABI).Str("python", r.cfg.Python).Bool("template", r.templateOn).
		Int64("warm_sandbox_bytes", r.warmBytes.Load()).Int64("warm_pool_size", r.poolSize.Load())
	for _, kv := range r.enforcement.Pairs() {
		if kv[0] != "gap" {
			ev = ev.Str(kv[0], kv[1])
		}
	}
	ev.Msg("sandbox ready")
	for _, gap := range r.enforcement.Gaps {
		r.log.Warn().Str("mode", string(r.mode)).Msg("sandbox: " + gap)
	}
	if hint := r.hostCgroupMoveHint(); hint != "" {
		r.log.Info().Msg("sandbox: " + hint)
	}
}

// Enforcement reports which mechanism enforces each limit and isolation
// layer, as verified by the start-up self-check.
func (r *Runner) Enforcement() Enforcement {
	e := r.enforcement
	e.Gaps = append([]string(nil), e.Gaps...)
	return e
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

func newRunner(cfg Config, mode Mode, hooks testHooks) (*Runner, error) {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	r := &Runner{
		cfg:        cfg,
		hooks:      hooks,
		mode:       mode,
		log:        cfg.Logger,
		name:       cgroup.Prefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:]),
		sem:        make(chan struct{}, cfg.Workers),
		pool:       make(chan *sandbox, max(cfg.WarmPool, 1)),
		starts:     newStartGate(),
		refill:     make(chan struct{}, 1),
		refillDone: make(chan struct{}),
		ahead:      make(chan prepared, 1),
		spareDirs:  make(chan string, cfg.WarmPool+cfg.Workers),
		closing:    make(chan struct{}),
		templates:  make(map[string]*templateEntry),
		warmEnv:    cfg.Environment,
	}
	r.poolSize.Store(int64(cfg.WarmPool))
	if err := r.makeWorkDir(); err != nil {
		return nil, err
	}
	if err := r.openCgroups(); err != nil {
		_ = os.RemoveAll(r.dir)
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return r, nil
}

// openCgroups creates the Runner's parent cgroup. Root mode requires one
// with the memory and pids controllers; rootless mode uses one when a
// cgroup is delegated to its user (given, or its own) and falls back to
// rlimits otherwise, and for each controller the cgroup lacks.
func (r *Runner) openCgroups() error {
	if r.hooks.forceRlimits {
		r.cgroupErr = errors.New("rlimits forced")
		return nil
	}
	layouts, err := cgroup.Layouts(r.cfg.CgroupDir, r.mode == ModeRootless)
	limits := cgroup.Limits{Memory: r.cfg.MemoryBytes, Pids: r.cfg.Pids, CPUs: r.cfg.CPUs}
	for _, layout := range layouts {
		tree, terr := cgroup.NewTree(layout, r.name, limits)
		if terr == nil && r.mode == ModeRoot && len(tree.Missing()) > 0 {
			terr = fmt.Errorf("no %s cgroup controller in cgroup v2 %s (delegate it, e.g. systemd Delegate=yes)",
				strings.Join(tree.Missing(), " and "), layout.Dir())
		}
		if terr == nil {
			r.cgroups = tree
			tree.SweepStale()
			return nil
		}
		_ = tree.Close()
		err = errors.Join(err, terr)
	}
	if r.mode == ModeRoot || r.cfg.CgroupDir != "" {
		// Asked for by name: a cgroup the gateway cannot use is an
		// error, not a reason to fall back.
		return err
	}
	r.dropCgroups(err)
	return nil
}

// dropCgroups makes the Runner limit runs with rlimits from now on.
func (r *Runner) dropCgroups(why error) {
	if r.cgroups != nil {
		_ = r.cgroups.Close()
	}
	r.cgroups, r.cgroupErr = nil, why
}

// makeWorkDir creates WorkDir/<name> (traversable, not listable, by the
// sandboxes' uids), removes directories of dead Runners and installs the
// Python runtime.
func (r *Runner) makeWorkDir() error {
	// Root mode: the sandboxes' uids traverse it. Rootless: they are the
	// gateway's own uid, and nobody else needs in.
	mode := os.FileMode(0o711)
	if r.mode == ModeRootless {
		mode = 0o700
	}
	if err := openWorkDir(r.cfg.WorkDir, mode); err != nil {
		return err
	}
	entries, _ := os.ReadDir(r.cfg.WorkDir)
	for _, e := range entries {
		if cgroup.StaleName(e.Name()) {
			_ = os.RemoveAll(filepath.Join(r.cfg.WorkDir, e.Name()))
		}
	}
	r.dir = filepath.Join(r.cfg.WorkDir, r.name)
	if err := os.Mkdir(r.dir, mode); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	for _, d := range []string{r.cfg.WorkDir, r.dir} {
		if err := os.Chmod(d, mode); err != nil {
			return fmt.Errorf("work dir: %w", err)
		}
	}
	r.libDir = filepath.Join(r.dir, "lib")
	if err := installRuntime(r.libDir); err != nil {
		_ = os.RemoveAll(r.dir)
		return fmt.Errorf("install the Python runtime: %w", err)
	}
	r.etcDir = filepath.Join(r.dir, "etc")
	if err := buildSystemView(r.etcDir, r.hooks.hostEtc()); err != nil {
		_ = os.RemoveAll(r.dir)
		return fmt.Errorf("build the runs' /etc: %w", err)
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
		return failed(runerror.Sandbox, err.Error()), nil
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
	sb, err := r.take(ctx, p.job.Egress != nil, p.job.Environment)
	if err != nil {
		r.releaseSlot()
		switch {
		case r.isClosing():
			return nil, ErrClosed
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			return nil, err // canceled while waiting for a sandbox
		}
		return failed(runerror.Sandbox, err.Error()), nil
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
	return Stats{Running: int(r.running.Load()), Queued: int(r.queued.Load()), WarmReady: len(r.pool), Starting: r.starts.count()}
}

// WarmSandboxBytes is the memory one warm sandbox takes (the sum of its
// processes' proportional set sizes), measured by the start-up self-check;
// 0 when it could not be measured.
func (r *Runner) WarmSandboxBytes() int64 { return r.warmBytes.Load() }

// TemplateRestarts counts sandbox templates that exited and were replaced.
func (r *Runner) TemplateRestarts() int { return int(r.templateRestarts.Load()) }

// UsesTemplate reports whether sandboxes are forked from a template.
func (r *Runner) UsesTemplate() bool {
	return r.templateOn
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
		for len(r.pool) > 0 { // offered by a start that lost a race
			r.teardown(<-r.pool)
		}
		r.stopTemplates()
		var discarded error
		if len(r.ahead) > 0 {
			discarded = (<-r.ahead).discard()
		}
		r.closeErr = errors.Join(discarded, r.cgroups.Close(), os.RemoveAll(r.dir))
	})
	return r.closeErr
}

// hostCgroupMoveHint is MoveHint for this host.
func (r *Runner) hostCgroupMoveHint() string {
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	cmdline, _ := os.ReadFile("/proc/cmdline")
	return cgroup.MoveHint(r.cgroups != nil, string(mountinfo), string(cmdline))
}
