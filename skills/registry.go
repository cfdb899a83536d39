package skills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/pyenv"
)

// DefaultWatchDebounce is how long the watcher waits for a burst of file
// events to settle before reloading.
const DefaultWatchDebounce = 250 * time.Millisecond

// DefaultWatchPollInterval is how often the tree is polled for changes
// when inotify is unavailable.
const DefaultWatchPollInterval = 2 * time.Second

// Options configures a Registry. Zero values take the documented defaults.
type Options struct {
	// Dir is the skills root, searched at any depth. Empty serves only the
	// built-in skills.
	Dir    string
	Logger zerolog.Logger
	// Watch reloads on file changes under Dir (fsnotify, debounced).
	Watch bool
	// WatchDebounce defaults to DefaultWatchDebounce.
	WatchDebounce time.Duration
	// WatchPollInterval is how often Watch polls the tree instead when no
	// inotify watcher can be had (the user's inotify instances are used
	// up, or the kernel has none). Defaults to DefaultWatchPollInterval.
	WatchPollInterval time.Duration
	// MaxSkillFiles defaults to DefaultMaxSkillFiles (512).
	MaxSkillFiles int
	// MaxSkillBytes defaults to DefaultMaxSkillBytes (16 MiB).
	MaxSkillBytes int64
	// OnReload, when set, is called after every successful load with the
	// new catalog and its report (metrics, change notifications). It runs
	// while reloads are serialized: it must not call Reload or Close.
	OnReload func(*Catalog, LoadReport)
	// Environments builds the Python environments skills declare. Nil (or
	// a builder without package sources) makes declaring requirements a
	// violation that says so.
	Environments *pyenv.Builder
	// OnChange, when set, is called when a catalog is swapped in outside
	// a reload: an environment finished building (its skill is offered)
	// or failed (its package is skipped). Same rules as OnReload.
	OnChange func(*Catalog, LoadReport)

	// newWatcher makes the inotify watcher; tests make it fail.
	newWatcher func() (*fsnotify.Watcher, error)
}

// Validate rejects negative limits.
func (o Options) Validate() error {
	if o.MaxSkillFiles < 0 || o.MaxSkillBytes < 0 || o.WatchDebounce < 0 || o.WatchPollInterval < 0 {
		return errors.New("skills options: limits and debounce must not be negative")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.MaxSkillFiles == 0 {
		o.MaxSkillFiles = DefaultMaxSkillFiles
	}
	if o.MaxSkillBytes == 0 {
		o.MaxSkillBytes = DefaultMaxSkillBytes
	}
	if o.WatchDebounce == 0 {
		o.WatchDebounce = DefaultWatchDebounce
	}
	if o.WatchPollInterval == 0 {
		o.WatchPollInterval = DefaultWatchPollInterval
	}
	if o.newWatcher == nil {
		o.newWatcher = fsnotify.NewWatcher
	}
	return o
}

// Registry loads skill packages from a folder tree and serves them as an
// immutable *Catalog that it swaps atomically on each reload. Its methods
// are safe for concurrent use.
type Registry struct {
	opts Options
	log  zerolog.Logger
	root string // absolute, symlinks resolved; "" without Dir
	cur  atomic.Pointer[Catalog]

	mu       sync.Mutex        // serializes reloads; guards the fields below
	lastGood map[string]*Skill // per package folder (abs): the last valid snapshot read there
	closed   bool
	builtins []*Skill
	loaded   []*Skill              // the last load's snapshots to serve, environments pending included
	report   LoadReport            // the last load's report, before environment states
	envs     map[string]*pyenv.Env // built environments, by key
	building map[string]bool       // keys with a build goroutine running
	failed   map[string]error      // keys whose build failed since the last reload
	ctx      context.Context       // ends the builds on Close
	cancel   context.CancelFunc
	builds   sync.WaitGroup // build goroutines
	// checkOnly: a Check, which builds inline and removes nothing.
	checkOnly bool

	watch *watcher // nil unless Options.Watch
}

// NewRegistry loads every package under opts.Dir once and, with
// opts.Watch, starts watching the tree. It fails when Dir is not a
// readable folder; invalid packages are only reported.
func NewRegistry(opts Options) (*Registry, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r := makeRegistry(opts)
	if opts.Dir != "" {
		root, err := resolveRoot(opts.Dir)
		if err != nil {
			return nil, err
		}
		r.root = root
	}
	if _, err := r.Reload(); err != nil {
		return nil, err
	}
	if opts.Watch && r.root != "" {
		w, err := startWatcher(r)
		if err != nil {
			return nil, err
		}
		r.watch = w
	}
	return r, nil
}

func makeRegistry(opts Options) *Registry {
	r := &Registry{opts: opts, log: opts.Logger, lastGood: map[string]*Skill{},
		envs: map[string]*pyenv.Env{}, building: map[string]bool{}, failed: map[string]error{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

func resolveRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("skills dir: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("skills dir: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("skills dir %s: not a directory", abs)
	}
	return abs, nil
}

// Catalog returns the current catalog. Keep the returned value for the
// whole of a call: later reloads never change it.
func (r *Registry) Catalog() *Catalog { return r.cur.Load() }

// Dir returns the resolved skills root ("" when there is none).
func (r *Registry) Dir() string { return r.root }

// Close stops the watcher and the environment builds in progress (their
// skills stay unoffered). It is idempotent; the last catalog stays
// readable, Reload fails with ErrRegistryClosed.
func (r *Registry) Close() error {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	r.mu.Unlock()
	if already {
		return nil
	}
	r.cancel()
	r.builds.Wait()
	if r.watch == nil {
		return nil
	}
	return r.watch.close()
}

// Reload reads the tree again and swaps in a new catalog (see the package
// documentation for the rules). It returns an error, keeping the current
// catalog, only when the root cannot be read; invalid packages are
// reported in the LoadReport and logged.
func (r *Registry) Reload() (LoadReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return LoadReport{}, ErrRegistryClosed
	}
	bi, err := builtins()
	if err != nil {
		return LoadReport{}, err
	}
	var rep LoadReport
	var fromDisk []*Skill
	if r.root != "" {
		cands, err := discover(r.root)
		if err != nil {
			return LoadReport{}, fmt.Errorf("reload skills: %w", err)
		}
		fromDisk, rep = r.loadLocked(cands)
	}
	r.builtins, r.loaded = bi, fromDisk
	// A reload tries failed builds again: the wheelhouse may have changed.
	r.failed = map[string]error{}
	r.settleEnvsLocked(&rep)
	r.report = rep
	cat := r.publishLocked()
	rep = r.reportLocked()
	r.logReport(rep)
	if r.opts.OnReload != nil {
		r.opts.OnReload(cat, rep)
	}
	return rep, nil
}

// Check loads every package under dir once, as a registry would (dir may be
// a skills root or a single package folder), and reports each one without
// serving anything: what an author runs before deploying. With
// opts.Environments it also builds the environments the packages declare,
// waiting for each, so that pip's verdict is in the report.
func Check(dir string, opts Options) (LoadReport, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return LoadReport{}, err
	}
	root, err := resolveRoot(dir)
	if err != nil {
		return LoadReport{}, err
	}
	cands, err := discover(root)
	if err != nil {
		return LoadReport{}, fmt.Errorf("check skills: %w", err)
	}
	r := makeRegistry(opts)
	defer r.cancel()
	r.root, r.checkOnly = root, true
	r.loaded, r.report = r.loadLocked(cands)
	r.settleEnvsLocked(&r.report)
	r.publishLocked()
	rep := r.reportLocked()
	rep.Skills = 0
	for _, s := range r.loaded {
		if r.envStateLocked(s) == envReady {
			rep.Skills++
		}
	}
	return rep, nil
}
