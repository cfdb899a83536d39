package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Verdict is what the tests said about one mutant.
type Verdict struct {
	Status string
	// Test is the first test that failed, when the tests killed it.
	Test string
	// Skipped are the tests that skipped.
	Skipped []string
}

var (
	buildFailed = regexp.MustCompile(`\[(build|setup) failed\]`)
	failedTest  = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	skippedTest = regexp.MustCompile(`(?m)^\s*--- SKIP: (\S+)`)
)

// judgeSkips turns a passing run that skipped a test the baseline ran
// into a kill: CI fails on a skip .ci/allowed-skips does not list, and a
// suite that skips when its subject is broken (the sandbox's tests skip
// when the isolation self-check refuses a sandbox) must not pass a mutant
// that breaks it.
func judgeSkips(v Verdict, baseline map[string]bool) Verdict {
	if v.Status != statusLived || baseline == nil {
		return v
	}
	for _, name := range v.Skipped {
		if !baseline[name] {
			v.Status, v.Test = statusKilled, "skipped "+name
			return v
		}
	}
	return v
}

// testTarget is what judges a mutant: a package's tests, maybe only those
// matching Run (go test -run).
type testTarget struct {
	Pkg, Run string
}

// goTest runs `go test -count=1 -failfast` of target in dir, with overlay
// (a go build -overlay file, or "" for none), for at most timeout.
func goTest(ctx context.Context, dir string, target testTarget, overlay string, timeout time.Duration) (Verdict, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env, err := overlayEnv(os.Environ(), overlay)
	if err != nil {
		return Verdict{}, nil, err
	}
	cmd := exec.CommandContext(ctx, "go", goTestArgs(target, timeout)...)
	cmd.Env = env
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// go test starts the compiler and the test binary as children: kill
	// the whole group, or a hanging mutant outlives its timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Verdict{Status: statusTimedOut}, out.Bytes(), nil
		}
		return Verdict{}, out.Bytes(), ctx.Err()
	}
	return verdictOf(err, out.Bytes())
}

// goTestArgs are go test's arguments for target: verbose, so that skips
// show (judgeSkips). The test binary's own
// -timeout is a backstop 30 s behind ours, should the kill of the process
// group miss it; it also makes a hung test print its stacks.
func goTestArgs(target testTarget, timeout time.Duration) []string {
	args := []string{"test", "-count=1", "-failfast", "-v", "-timeout", (timeout + 30*time.Second).String()}
	if target.Run != "" {
		args = append(args, "-run", target.Run)
	}
	return append(args, target.Pkg)
}

// overlayEnv adds overlay to GOFLAGS in env rather than to go test's
// arguments: a test that builds a binary itself (go build of a command, as
// cmd/skillgate's end-to-end tests do) then builds the mutant too.
func overlayEnv(env []string, overlay string) ([]string, error) {
	if overlay == "" {
		return env, nil
	}
	if strings.ContainsAny(overlay, " \t\n") {
		return nil, fmt.Errorf("overlay path %q holds a space, which GOFLAGS cannot carry: set TMPDIR to a path without one", overlay)
	}
	flags := "-overlay=" + overlay
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			if v = strings.TrimSpace(v); v != "" {
				flags = v + " " + flags
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GOFLAGS="+flags), nil
}

// verdictOf reads the outcome of a go test run: passed is LIVED, a build
// or vet failure NOT VIABLE, a failed test KILLED.
func verdictOf(err error, out []byte) (Verdict, []byte, error) {
	if err == nil {
		v := Verdict{Status: statusLived}
		for _, m := range skippedTest.FindAllSubmatch(out, -1) {
			v.Skipped = append(v.Skipped, string(m[1]))
		}
		return v, out, nil
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return Verdict{}, out, fmt.Errorf("run go test: %w", err)
	}
	if buildFailed.Match(out) {
		return Verdict{Status: statusNotViable}, out, nil
	}
	v := Verdict{Status: statusKilled}
	if m := failedTest.FindSubmatch(out); m != nil {
		v.Test = string(m[1])
	} else if bytes.Contains(out, []byte("panic: ")) {
		v.Test = "panic"
	}
	return v, out, nil
}

// writeOverlay puts the mutated source of file (an absolute path) and the
// overlay file that points go at it into dir, and returns the latter.
func writeOverlay(dir, file string, src []byte) (string, error) {
	mutated := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(mutated, src, 0o600); err != nil {
		return "", fmt.Errorf("write mutant: %w", err)
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": {file: mutated}})
	if err != nil {
		return "", fmt.Errorf("write overlay: %w", err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, data, 0o600); err != nil {
		return "", fmt.Errorf("write overlay: %w", err)
	}
	return overlay, nil
}
