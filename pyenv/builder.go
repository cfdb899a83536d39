package pyenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/metrics"
)

// Defaults of Config.
const (
	DefaultPython      = "/usr/bin/python3"
	DefaultTimeout     = 10 * time.Minute
	DefaultMemoryBytes = 2 << 30
	DefaultMaxBuilds   = 2
)

// keyFormat versions the content address: a change to how environments
// are built changes every key, so old directories are not reused.
const keyFormat = "skillgate-pyenv-1"

// Config configures a Builder. Zero values take the documented defaults.
type Config struct {
	// Dir holds the environments, one directory per key. Empty: a
	// temporary directory that Close removes (environments are then built
	// again after a restart).
	Dir string
	// Python is the interpreter whose pip installs, the one runs use.
	// Defaults to DefaultPython.
	Python string
	// FindLinks are wheelhouse folders or URLs (pip --find-links); local
	// folders are made absolute.
	FindLinks []string
	// IndexURL is a package index (pip --index-url); empty means none:
	// pip runs with --no-index.
	IndexURL string
	// Timeout bounds one pip run; defaults to DefaultTimeout.
	Timeout time.Duration
	// MemoryBytes is pip's address-space limit; defaults to
	// DefaultMemoryBytes.
	MemoryBytes int64
	// MaxBuilds bounds concurrent pip runs; defaults to DefaultMaxBuilds.
	MaxBuilds int
	Logger    zerolog.Logger
	// Metrics, when set, counts builds and their duration.
	Metrics *metrics.Metrics
}

// Validate checks the sources and limits.
func (c Config) Validate() error {
	var errs []error
	for _, f := range c.FindLinks {
		if f == "" {
			errs = append(errs, errors.New("python find-links: empty entry"))
		} else if isURL(f) {
			if err := checkURL(f); err != nil {
				errs = append(errs, fmt.Errorf("python find-links %q: %w", f, err))
			}
		}
	}
	if c.IndexURL != "" {
		if err := checkURL(c.IndexURL); err != nil {
			errs = append(errs, fmt.Errorf("python index URL %q: %w", c.IndexURL, err))
		}
	}
	if c.Python != "" && !filepath.IsAbs(c.Python) {
		errs = append(errs, fmt.Errorf("python %q: not an absolute path", c.Python))
	}
	if c.Timeout < 0 || c.MemoryBytes < 0 || c.MaxBuilds < 0 {
		errs = append(errs, errors.New("python environment limits must not be negative"))
	}
	return errors.Join(errs...)
}

func isURL(s string) bool { return strings.Contains(s, "://") }

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file" {
		return errors.New("not an http, https or file URL")
	}
	if u.Scheme != "file" && u.Host == "" {
		return errors.New("URL has no host")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MemoryBytes == 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.MaxBuilds == 0 {
		c.MaxBuilds = DefaultMaxBuilds
	}
	return c
}

// Env is a built environment: a read-only directory in pip --target
// layout. It is immutable.
type Env struct {
	// Key is the content address (the directory's name).
	Key string
	// Dir is the absolute path of the directory.
	Dir string
	// Installed lists the distributions in the directory, by normalized
	// name: what was actually installed, dependencies included.
	Installed []Dist
}

// Dist is one installed distribution, as its .dist-info says.
type Dist struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Builder builds environments and keeps their directories. Its methods
// are safe for concurrent use.
type Builder struct {
	cfg      Config
	root     string // absolute
	ownsRoot bool   // a temporary root, removed by Close
	interp   string // what the interpreter says it is, part of every key
	sem      chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc

	mu       sync.Mutex // guards the fields below
	inflight map[string]*build
	retained map[string]map[string]bool // owner -> keys
	held     map[string]int             // key -> runs using it
	envs     map[string]*Env            // built, by key (cache of Lookup)
	closed   bool
	wg       sync.WaitGroup
}

// build is one pip run in progress; done closes when env or err is set.
type build struct {
	done chan struct{}
	env  *Env
	err  error
}

// New prepares the environments directory (removing what an interrupted
// build or removal left there) and asks the interpreter what it is.
func New(cfg Config) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.FindLinks = slices.Clone(cfg.FindLinks) // made absolute below: the caller's slice stays as it was
	for i, f := range cfg.FindLinks {
		if !isURL(f) {
			abs, err := filepath.Abs(f)
			if err != nil {
				return nil, fmt.Errorf("python find-links %q: %w", f, err)
			}
			cfg.FindLinks[i] = abs
		}
	}
	b := &Builder{cfg: cfg, sem: make(chan struct{}, cfg.MaxBuilds), inflight: map[string]*build{},
		retained: map[string]map[string]bool{}, held: map[string]int{}, envs: map[string]*Env{}}
	if err := b.openRoot(); err != nil {
		return nil, err
	}
	interp, err := probeInterpreter(cfg.Python)
	if err != nil {
		b.removeRoot()
		return nil, err
	}
	b.interp = interp
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b, nil
}

func (b *Builder) openRoot() error {
	if b.cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "skillgate-envs-")
		if err != nil {
			return fmt.Errorf("python environments: %w", err)
		}
		b.root, b.ownsRoot = dir, true
		return nil
	}
	abs, err := filepath.Abs(b.cfg.Dir)
	if err == nil {
		err = os.MkdirAll(abs, 0o755)
	}
	if err != nil {
		return fmt.Errorf("python environments dir: %w", err)
	}
	b.root = abs
	entries, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("python environments dir: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			_ = removeTree(filepath.Join(abs, e.Name()))
		}
	}
	return nil
}

func (b *Builder) removeRoot() {
	if b.ownsRoot {
		_ = removeTree(b.root)
	}
}

// probeInterpreter returns the version, platform and bytecode tag of the
// interpreter: a wheel built for one may not load in another.
func probeInterpreter(python string) (string, error) {
	cmd := exec.Command(python, "-I", "-c",
		"import sys, sysconfig; print(sys.version.split()[0], sysconfig.get_platform(), sys.implementation.cache_tag)")
	cmd.Env = cleanEnv("")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("python environments: cannot ask %s for its version: %w", python, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Dir is the directory environments live in.
func (b *Builder) Dir() string { return b.root }

// Interpreter is what the interpreter said it is (version, platform, tag).
func (b *Builder) Interpreter() string { return b.interp }

// HasSources reports whether any package source is configured: without
// one, no requirement can be installed.
func (b *Builder) HasSources() bool { return len(b.cfg.FindLinks) > 0 || b.cfg.IndexURL != "" }

// Key is the content address of an environment holding reqs: a hash of
// the canonical requirements, the sources and the interpreter. It is ""
// for an empty list, which needs no environment.
func (b *Builder) Key(reqs []Requirement) string {
	if len(reqs) == 0 {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\npython %s\nonly-binary :all:\n", keyFormat, b.interp)
	for _, f := range b.cfg.FindLinks {
		fmt.Fprintf(h, "find-links %s\n", f)
	}
	fmt.Fprintf(h, "index-url %s\n", b.cfg.IndexURL)
	for _, r := range Canonical(reqs) {
		fmt.Fprintf(h, "requirement %s\n", r.line())
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Lookup returns the environment of key when it is built: its directory
// exists (a build renames it into place only once complete).
func (b *Builder) Lookup(key string) (*Env, bool) {
	if key == "" {
		return nil, false
	}
	b.mu.Lock()
	env, ok := b.envs[key]
	b.mu.Unlock()
	if ok {
		return env, true
	}
	dir := filepath.Join(b.root, key)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, false
	}
	env = &Env{Key: key, Dir: dir, Installed: ReadInstalled(dir)}
	b.mu.Lock()
	b.envs[key] = env
	b.mu.Unlock()
	return env, true
}

// Build returns the environment of reqs, building it first unless it
// exists; concurrent calls for one key share one pip run. It fails with
// ErrNoSources, a *BuildError (errors.Is ErrBuildFailed), ErrClosed or
// ctx's error. The build goes on for the other callers when ctx ends.
func (b *Builder) Build(ctx context.Context, reqs []Requirement) (*Env, error) {
	if len(reqs) == 0 {
		return nil, errors.New("python environment: no requirements")
	}
	if !b.HasSources() {
		return nil, ErrNoSources
	}
	key := b.Key(reqs)
	if env, ok := b.Lookup(key); ok {
		return env, nil
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	bd, running := b.inflight[key]
	if !running {
		bd = &build{done: make(chan struct{})}
		b.inflight[key] = bd
		b.wg.Add(1)
		go b.run(key, Canonical(reqs), bd)
	}
	b.mu.Unlock()
	select {
	case <-bd.done:
		return bd.env, bd.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *Builder) run(key string, reqs []Requirement, bd *build) {
	defer b.wg.Done()
	select {
	case b.sem <- struct{}{}:
		bd.env, bd.err = b.install(key, reqs)
		<-b.sem
	case <-b.ctx.Done():
		bd.err = ErrClosed
	}
	b.mu.Lock()
	delete(b.inflight, key)
	if bd.env != nil {
		b.envs[key] = bd.env
	}
	b.mu.Unlock()
	close(bd.done)
}

// Close stops the builds in progress (their callers get ErrClosed or a
// build error) and waits for them; a temporary directory is removed.
// Built environments stay for the next start. Idempotent.
func (b *Builder) Close() error {
	b.mu.Lock()
	already := b.closed
	b.closed = true
	b.mu.Unlock()
	if already {
		return nil
	}
	b.cancel()
	b.wg.Wait()
	b.removeRoot()
	return nil
}
