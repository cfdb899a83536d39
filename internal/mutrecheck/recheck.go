package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"
)

// Config is one re-check: which report, which package, which mutants.
type Config struct {
	// Dir is where go test runs (the module root); Pkg is the package as
	// given to `make mutation`, relative to Dir (./session).
	Dir, Pkg string
	// TestPkg, when set, is the package whose tests judge the mutants
	// instead of Pkg's own: code that runs only inside another package's
	// tests (a sandbox's pid 1 runs only in the sandbox's) is judged there.
	TestPkg string
	// Run, when set, runs only the tests it matches (go test -run): a
	// subset, so a mutant it leaves alive may still die in the rest.
	Run    string
	Report Report
	// Statuses are the report statuses whose mutants run again.
	Statuses []string
	// Files, when set, keeps only the mutants of matching file names.
	Files *regexp.Regexp
	// Sample, when positive and below the number selected, judges only
	// that many of them, drawn at random (reproducibly, from Seed): on a
	// package whose every mutant costs minutes, an estimate of its score
	// with a known margin (see Estimate) instead of none.
	Sample int
	Seed   uint64
	// Timeout bounds each go test run, the build included.
	Timeout time.Duration
	// Baseline runs the tests once without a mutant first: if they fail
	// already, every mutant would look killed.
	Baseline bool
	// Verbose prints go test's output under each mutant.
	Verbose bool
	// Workers is how many mutants are judged at once (at least 1). On a
	// small machine two use it better than one: a mutant's build is mostly
	// one compile and one link, each on one core.
	Workers int
	Out     io.Writer

	// baselineSkips are the tests that skipped without a mutant (nil
	// without a baseline: then skips are not judged).
	baselineSkips map[string]bool
}

// Rechecked is the outcome for one mutant.
type Rechecked struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Type   string `json:"type"`
	Was    string `json:"was"`
	Status string `json:"status"`
	Test   string `json:"test,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Run re-checks the selected mutants, Workers at a time, and returns
// their outcomes in the report's order, printing each as soon as those
// before it are printed.
func Run(ctx context.Context, cfg Config) ([]Rechecked, error) {
	if cfg.Baseline {
		skipped, err := baseline(ctx, cfg)
		if err != nil {
			return nil, err
		}
		cfg.baselineSkips = skipped
	}
	var jobs []mutantJob
	sources := map[string][]byte{}
	for _, m := range cfg.Select() {
		j, err := prepare(cfg, m, sources)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}

	// On the way out the workers are stopped first, then waited for.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	next := make(chan *mutantJob)
	for range max(cfg.Workers, 1) {
		wg.Go(func() {
			for j := range next {
				j.test(ctx, cfg)
			}
		})
	}
	go func() {
		defer close(next)
		for i := range jobs {
			select {
			case next <- &jobs[i]:
			case <-ctx.Done():
				return
			}
		}
	}()

	var out []Rechecked
	for i := range jobs {
		j := &jobs[i]
		select {
		case <-j.done:
		case <-ctx.Done():
			return out, ctx.Err()
		}
		if j.err != nil {
			return out, fmt.Errorf("%s: %w", j.mutant.Pos(), j.err)
		}
		printMutant(cfg.Out, j.result)
		out = append(out, j.result)
	}
	return out, nil
}

// Select returns the report's mutants the re-check judges, in the
// report's order: those with a status in Statuses and a file Files
// matches, or Sample of them drawn at random.
func (cfg Config) Select() []Mutant {
	var selected []Mutant
	for _, m := range cfg.Report.Mutants() {
		if slices.Contains(cfg.Statuses, m.Status) && (cfg.Files == nil || cfg.Files.MatchString(m.File)) {
			selected = append(selected, m)
		}
	}
	if cfg.Sample <= 0 || cfg.Sample >= len(selected) {
		return selected
	}
	draw := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed)).Perm(len(selected))[:cfg.Sample]
	slices.Sort(draw)
	sample := make([]Mutant, len(draw))
	for i, k := range draw {
		sample[i] = selected[k]
	}
	return sample
}

// selectedWithoutSample is how many mutants Select would return without
// a sample: the population a sample stands for.
func (cfg Config) selectedWithoutSample() int {
	cfg.Sample = 0
	return len(cfg.Select())
}

// mutantJob is one mutant to judge: its source is prepared in the
// report's order, its tests run on a worker.
type mutantJob struct {
	mutant Mutant
	// path is the file the mutant changes; mutated its source, nil when
	// result is known without a test run (STALE).
	path    string
	mutated []byte
	result  Rechecked
	err     error
	done    chan struct{}
}

// baseline runs the tests without a mutant and returns the tests that
// skipped there: a mutant that makes another one skip is killed.
func baseline(ctx context.Context, cfg Config) (map[string]bool, error) {
	v, output, err := goTest(ctx, cfg.Dir, cfg.target(), "", cfg.Timeout)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	if v.Status != statusLived {
		return nil, fmt.Errorf("baseline: the tests of %s do not pass without a mutant (%s), so no mutant can be judged:\n%s", cfg.target().Pkg, v.Status, tail(output, 40))
	}
	skipped := make(map[string]bool, len(v.Skipped))
	for _, name := range v.Skipped {
		skipped[name] = true
	}
	return skipped, nil
}

// prepare applies m to its file's source (read once per file, into
// sources).
func prepare(cfg Config, m Mutant, sources map[string][]byte) (mutantJob, error) {
	j := mutantJob{mutant: m, done: make(chan struct{}),
		result: Rechecked{File: m.File, Line: m.Line, Column: m.Column, Type: m.Type, Was: m.Status}}
	path, err := filepath.Abs(filepath.Join(cfg.Dir, cfg.Pkg, m.File))
	if err != nil {
		return j, fmt.Errorf("%s: %w", m.Pos(), err)
	}
	src, ok := sources[path]
	if !ok {
		if src, err = os.ReadFile(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return j, fmt.Errorf("%s: %w", m.Pos(), err)
		}
		sources[path] = src
	}
	if src == nil {
		j.result.Status, j.result.Detail = statusStale, "the file is gone"
		return j, nil
	}
	mutated, err := Apply(src, m.Type, m.Line, m.Column)
	if errors.Is(err, ErrStale) {
		j.result.Status, j.result.Detail = statusStale, err.Error()
		return j, nil
	}
	if err != nil {
		return j, fmt.Errorf("%s: %w", m.Pos(), err)
	}
	j.path, j.mutated = path, mutated
	return j, nil
}

// test runs the tests against the mutant, unless its verdict is known.
func (j *mutantJob) test(ctx context.Context, cfg Config) {
	defer close(j.done)
	if j.mutated == nil {
		return
	}
	v, output, err := testMutant(ctx, cfg, j.path, j.mutated)
	if err != nil {
		j.err = err
		return
	}
	v = judgeSkips(v, cfg.baselineSkips)
	j.result.Status, j.result.Test = v.Status, v.Test
	if cfg.Verbose {
		j.result.Detail = string(tail(output, 40))
	}
}

// testMutant runs the tests with path replaced by src, from a temporary
// directory of its own that is gone afterwards.
func testMutant(ctx context.Context, cfg Config, path string, src []byte) (Verdict, []byte, error) {
	dir, err := os.MkdirTemp("", "mutrecheck-")
	if err != nil {
		return Verdict{}, nil, err
	}
	defer os.RemoveAll(dir)
	overlay, err := writeOverlay(dir, path, src)
	if err != nil {
		return Verdict{}, nil, err
	}
	return goTest(ctx, cfg.Dir, cfg.target(), overlay, cfg.Timeout)
}

// target is the tests that judge the mutants: TestPkg's, else Pkg's own.
func (cfg Config) target() testTarget {
	pkg := cfg.TestPkg
	if pkg == "" {
		pkg = cfg.Pkg
	}
	return testTarget{Pkg: pkg, Run: cfg.Run}
}

// tail keeps the last n lines of out.
func tail(out []byte, n int) []byte {
	lines := 0
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] == '\n' && i != len(out)-1 {
			if lines++; lines == n {
				return out[i+1:]
			}
		}
	}
	return out
}
