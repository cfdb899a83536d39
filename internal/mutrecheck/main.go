package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"
)

// Result is what -o writes.
type Result struct {
	Report   string      `json:"report"`
	Package  string      `json:"package"`
	Tests    string      `json:"tests,omitempty"`
	Run      string      `json:"run,omitempty"`
	Statuses []string    `json:"statuses"`
	Mutants  []Rechecked `json:"mutants"`
	Before   Counts      `json:"before"`
	After    Counts      `json:"after"`
	// Sample is set when -sample judged only some of the mutants.
	Sample *Estimate `json:"sample,omitempty"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutrecheck:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, reportPath, outPath, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg.Out = stdout
	rechecked, runErr := Run(ctx, cfg)
	before, after := Tally(cfg.Report, rechecked)
	printSummary(stdout, rechecked, before, after)
	var sample *Estimate
	if all := cfg.selectedWithoutSample(); cfg.Sample > 0 && cfg.Sample < all {
		e := estimate(rechecked, all, cfg.Seed)
		printEstimate(stdout, e)
		sample = &e
	}
	if outPath != "" {
		res := Result{Report: reportPath, Package: cfg.Pkg, Tests: cfg.TestPkg, Run: cfg.Run, Statuses: cfg.Statuses, Mutants: rechecked, Before: before, After: after, Sample: sample}
		if err := writeJSON(outPath, res); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

func parseFlags(args []string, stderr io.Writer) (Config, string, string, error) {
	fl := flag.NewFlagSet("mutrecheck", flag.ContinueOnError)
	fl.SetOutput(stderr)
	report := fl.String("report", "", "gremlins JSON report to re-check (required), e.g. .mutation/session.json")
	pkg := fl.String("pkg", "", "the package the report is of, as given to gremlins (required), e.g. ./session")
	status := fl.String("status", statusLived, `statuses to re-check, comma-separated: LIVED, "TIMED OUT", "NOT COVERED"; KILLED and RUNNABLE (a --dry-run report) run those for real; "NOT VIABLE" again after the tree did not build`)
	testPkg := fl.String("test-pkg", "", "judge the mutants by this package's tests instead of -pkg's own, e.g. ./sandbox for ./sandbox/internal/pid1")
	runTests := fl.String("run", "", "run only the tests matching this regular expression (go test -run): a lower bound of the score")
	files := fl.String("files", "", "re-check only the mutants of files whose name matches this regular expression")
	timeout := fl.Duration("timeout", 3*time.Minute, "bound of each mutant's go test run, build included")
	noBaseline := fl.Bool("no-baseline", false, "skip the first run without a mutant that checks the tests pass")
	workers := fl.Int("workers", 1, "how many mutants to judge at once")
	sample := fl.Int("sample", 0, "judge only this many of the selected mutants, drawn at random, and estimate the score of them all with its 95% interval")
	seed := fl.Uint64("seed", 1, "the seed of -sample's draw: the same seed draws the same mutants")
	verbose := fl.Bool("v", false, "print the end of go test's output under each mutant")
	out := fl.String("o", "", "also write the outcome as JSON to this file")
	if err := fl.Parse(args); err != nil {
		return Config{}, "", "", err
	}
	cfg := Config{Dir: ".", Pkg: *pkg, TestPkg: *testPkg, Run: *runTests, Timeout: *timeout, Baseline: !*noBaseline, Verbose: *verbose, Workers: *workers, Sample: *sample, Seed: *seed}
	if *report == "" || *pkg == "" {
		return cfg, "", "", errors.New("-report and -pkg are required")
	}
	if fl.NArg() > 0 {
		return cfg, "", "", fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	if *workers < 1 {
		return cfg, "", "", fmt.Errorf("-workers %d: must be at least 1", *workers)
	}
	if *sample < 0 {
		return cfg, "", "", fmt.Errorf("-sample %d: must not be negative", *sample)
	}
	if *timeout <= 0 {
		return cfg, "", "", fmt.Errorf("-timeout %s: must be positive", *timeout)
	}
	var err error
	if cfg.Statuses, err = ParseStatuses(*status); err != nil {
		return cfg, "", "", fmt.Errorf("-status: %w", err)
	}
	if _, err := regexp.Compile(*runTests); err != nil {
		return cfg, "", "", fmt.Errorf("-run: %w", err)
	}
	if *files != "" {
		if cfg.Files, err = regexp.Compile(*files); err != nil {
			return cfg, "", "", fmt.Errorf("-files: %w", err)
		}
	}
	data, err := os.ReadFile(*report)
	if err != nil {
		return cfg, "", "", fmt.Errorf("read report (written by make mutation PKG=%s): %w", *pkg, err)
	}
	if cfg.Report, err = ParseReport(data); err != nil {
		return cfg, "", "", fmt.Errorf("%s: %w", *report, err)
	}
	return cfg, *report, *out, nil
}

func writeJSON(path string, res Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
