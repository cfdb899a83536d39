package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tinySource has one mutant of each outcome: the test below kills the
// negation of n > 10 but not its boundary (IsBig(10) is never asked),
// "hi " - s does not build, and i-- never ends the loop.
const tinySource = `package tiny

// Greet greets.
func Greet(s string) string { return "hi " + s }

// IsBig says whether n is over 10.
func IsBig(n int) bool {
	return n > 10
}

// Sum adds 0..n-1.
func Sum(n int) int {
	total := 0
	for i := 0; i < n; i++ {
		total += i
	}
	return total
}
`

const tinyTest = `package tiny

import "testing"

func TestGreet(t *testing.T) {
	if Greet("a") != "hi a" {
		t.Fatal("Greet")
	}
}

func TestIsBig(t *testing.T) {
	if !IsBig(20) || IsBig(1) {
		t.Fatal("IsBig")
	}
}

func TestSum(t *testing.T) {
	if Sum(4) != 6 {
		t.Fatal("Sum")
	}
}
`

// tinyModule writes the module into a temporary directory, with a
// report as gremlins would write it for the given mutants of tiny.go.
func tinyModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/tiny\n\ngo 1.26\n")
	write(t, filepath.Join(dir, "tiny.go"), tinySource)
	write(t, filepath.Join(dir, "tiny_test.go"), tinyTest)
	return dir
}

// tinyModuleJudgedBy is the module without its own tests, with these
// files (path, then content, relative to the module) instead.
func tinyModuleJudgedBy(t *testing.T, files ...string) string {
	t.Helper()
	dir := tinyModule(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "tiny_test.go")))
	for i := 0; i+1 < len(files); i += 2 {
		path := filepath.Join(dir, files[i])
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		write(t, path, files[i+1])
	}
	return dir
}

// tinyModuleJudgedByTests is the module judged by the tests of a package
// judge inside it, which imports it; tests is the file after its imports.
func tinyModuleJudgedByTests(t *testing.T, tests string) string {
	t.Helper()
	return tinyModuleJudgedBy(t, "judge/judge_test.go", `package judge

import (
	"testing"

	"example.com/tiny"
)

`+tests)
}

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
}

func tinyReport(ms ...ReportMutation) Report {
	return Report{GoModule: "example.com/tiny", Files: []ReportFile{{Filename: "tiny.go", Mutations: ms}}}
}

// The tool's verdicts on a real module, real go test runs: one killed,
// one lived, one not viable, one stale; mutants of other statuses stay
// as the report says.
func TestRecheckTinyModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module five times")
	}
	dir := tinyModule(t)
	var out bytes.Buffer
	report := tinyReport(
		ReportMutation{Type: "ARITHMETIC_BASE", Status: statusLived, Line: 4, Column: 44},
		ReportMutation{Type: "CONDITIONALS_BOUNDARY", Status: statusLived, Line: 8, Column: 11},
		ReportMutation{Type: "CONDITIONALS_NEGATION", Status: statusLived, Line: 8, Column: 11},
		ReportMutation{Type: "CONDITIONALS_NEGATION", Status: statusLived, Line: 8, Column: 9},
		ReportMutation{Type: "INCREMENT_DECREMENT", Status: statusKilled, Line: 14, Column: 22},
		ReportMutation{Type: "INVERT_ASSIGNMENTS", Status: statusNotCovered, Line: 15, Column: 9},
	)
	got, err := Run(context.Background(), Config{
		Dir: dir, Pkg: ".", Report: report, Statuses: []string{statusLived},
		Timeout: 5 * time.Minute, Baseline: true, Out: &out, Workers: 2,
	})
	require.NoError(t, err)
	require.Len(t, got, 4)
	assert.Equal(t, Rechecked{File: "tiny.go", Line: 4, Column: 44, Type: "ARITHMETIC_BASE", Was: statusLived, Status: statusNotViable}, got[0])
	assert.Equal(t, Rechecked{File: "tiny.go", Line: 8, Column: 11, Type: "CONDITIONALS_BOUNDARY", Was: statusLived, Status: statusLived}, got[1])
	assert.Equal(t, Rechecked{File: "tiny.go", Line: 8, Column: 11, Type: "CONDITIONALS_NEGATION", Was: statusLived, Status: statusKilled, Test: "TestIsBig"}, got[2])
	assert.Equal(t, statusStale, got[3].Status)
	assert.Equal(t, `stale: the token at 8:9 is "n", which CONDITIONALS_NEGATION does not change`, got[3].Detail)

	assert.Equal(t, ""+
		"  NOT VIABLE ARITHMETIC_BASE at tiny.go:4:44  (was LIVED)\n"+
		"       LIVED CONDITIONALS_BOUNDARY at tiny.go:8:11  (was LIVED)\n"+
		"      KILLED CONDITIONALS_NEGATION at tiny.go:8:11  (was LIVED, failed: TestIsBig)\n"+
		"       STALE CONDITIONALS_NEGATION at tiny.go:8:9  (was LIVED, stale: the token at 8:9 is \"n\", which CONDITIONALS_NEGATION does not change)\n",
		out.String())

	before, after := Tally(report, got)
	assert.Equal(t, Counts{Killed: 1, Lived: 4, NotCovered: 1, Efficacy: 20}, before)
	assert.InDelta(t, 66.67, after.Efficacy, 0.01)
	after.Efficacy = 0
	assert.Equal(t, Counts{Killed: 2, Lived: 1, NotCovered: 1, NotViable: 1, Stale: 1}, after)

	// The real file was never touched: the mutants lived in overlays.
	src, err := os.ReadFile(filepath.Join(dir, "tiny.go"))
	require.NoError(t, err)
	assert.Equal(t, tinySource, string(src))
}

// A mutant that hangs (i-- never reaches n) is ended at the timeout and
// reported TIMED OUT, whatever the machine's speed: it cannot finish.
func TestRecheckTimesOutAHangingMutant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	dir := tinyModule(t)
	report := tinyReport(
		ReportMutation{Type: "INCREMENT_DECREMENT", Status: statusTimedOut, Line: 14, Column: 22},
		ReportMutation{Type: "CONDITIONALS_BOUNDARY", Status: statusLived, Line: 8, Column: 11},
	)
	got, err := Run(context.Background(), Config{
		Dir: dir, Pkg: ".", Report: report, Statuses: []string{statusTimedOut},
		Files: regexp.MustCompile(`^tiny\.go$`), Timeout: 3 * time.Second, Out: &bytes.Buffer{},
	})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, statusTimedOut, got[0].Status)
	// go test's children went with it: the whole process group is killed,
	// not only go test, which would leave the hanging test binary behind.
	assert.Empty(t, processesNamed(t, "tiny.test"), "the hanging test binary outlived its timeout")
}

// processesNamed lists the pids whose command is a file named name.
func processesNamed(t *testing.T, name string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	var found []string
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue // ended since the glob
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if filepath.Base(string(argv0)) == name {
			found = append(found, filepath.Base(filepath.Dir(p)))
		}
	}
	return found
}

// A test that builds and runs a command of the module itself (as
// cmd/skillgate's end-to-end tests do) builds the mutant too: the overlay
// reaches that inner go build through GOFLAGS, beside any GOFLAGS set
// already.
func TestRecheckMutantReachesBuildsInsideTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	dir := tinyModuleJudgedBy(t, "hello/main.go", `package main

import (
	"fmt"

	"example.com/tiny"
)

func main() { fmt.Println(tiny.IsBig(20)) }
`, "hello_test.go", `package tiny

import (
	"os/exec"
	"testing"
)

func TestHello(t *testing.T) {
	out, err := exec.Command("go", "run", "./hello").CombinedOutput()
	if err != nil || string(out) != "true\n" {
		t.Fatalf("hello: %q, %v", out, err)
	}
}
`)
	t.Setenv("GOFLAGS", "-mod=mod")
	got, err := Run(context.Background(), Config{
		Dir: dir, Pkg: ".", Statuses: []string{statusRunnable}, Timeout: 5 * time.Minute, Baseline: true, Out: &bytes.Buffer{},
		Report: tinyReport(ReportMutation{Type: "CONDITIONALS_NEGATION", Status: statusRunnable, Line: 8, Column: 11}),
	})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, statusKilled, got[0].Status, "the command go run built was the mutant")
	assert.Equal(t, "TestHello", got[0].Test)
}

// go test's arguments: -failfast, no cached result, the test binary's own
// timeout 30 s behind the run's, then -run and the package.
func TestGoTestArgs(t *testing.T) {
	assert.Equal(t, []string{"test", "-count=1", "-failfast", "-v", "-timeout", "3m30s", "./session"},
		goTestArgs(testTarget{Pkg: "./session"}, 3*time.Minute))
	assert.Equal(t, []string{"test", "-count=1", "-failfast", "-v", "-timeout", "1m30s", "-run", "^TestA$", "./sandbox"},
		goTestArgs(testTarget{Pkg: "./sandbox", Run: "^TestA$"}, time.Minute))
}

func TestOverlayEnv(t *testing.T) {
	env := []string{"HOME=/h", "GOFLAGS=-exec=/x/run  ", "PATH=/bin"}
	got, err := overlayEnv(env, "")
	require.NoError(t, err)
	assert.Equal(t, env, got, "no overlay: the environment as it is")

	got, err = overlayEnv(env, "/tmp/m/overlay.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"HOME=/h", "PATH=/bin", "GOFLAGS=-exec=/x/run -overlay=/tmp/m/overlay.json"}, got)
	got, err = overlayEnv([]string{"GOFLAGS=", "A=b"}, "/o.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"A=b", "GOFLAGS=-overlay=/o.json"}, got)
	got, err = overlayEnv([]string{"A=b"}, "/o.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"A=b", "GOFLAGS=-overlay=/o.json"}, got)

	_, err = overlayEnv(env, "/tmp/my dir/overlay.json")
	assert.ErrorContains(t, err, "set TMPDIR to a path without one")
}

func TestTail(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 9, "a\nb\nc\n"},
		{"\na", 1, "a"},
		{"\n\n", 1, "\n"},
		{"", 1, ""},
	} {
		assert.Equal(t, c.want, string(tail([]byte(c.in), c.n)), "tail(%q, %d)", c.in, c.n)
	}
}

// A baseline that fails stops the re-check before any mutant: with the
// tests already red, every mutant would look killed.
func TestRecheckRefusesFailingTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	dir := tinyModule(t)
	write(t, filepath.Join(dir, "red_test.go"), "package tiny\n\nimport \"testing\"\n\nfunc TestRed(t *testing.T) { t.Fatal(\"red\") }\n")
	got, err := Run(context.Background(), Config{
		Dir: dir, Pkg: ".", Statuses: []string{statusLived}, Timeout: 5 * time.Minute, Baseline: true, Out: &bytes.Buffer{},
		Report: tinyReport(ReportMutation{Type: "CONDITIONALS_BOUNDARY", Status: statusLived, Line: 8, Column: 11}),
	})
	require.ErrorContains(t, err, "baseline: the tests of . do not pass without a mutant (KILLED)")
	assert.ErrorContains(t, err, "TestRed")
	assert.Empty(t, got)
}

// Code that only another package's tests run (a sandbox's pid 1, which
// the sandbox's tests start) is judged by that package's tests
// (-test-pkg), maybe only some of them (-run); KILLED and a dry run's
// RUNNABLE mutants run for real too.
func TestRecheckJudgedByAnotherPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	dir := tinyModuleJudgedByTests(t, `func TestBig(t *testing.T) {
	if !tiny.IsBig(20) || tiny.IsBig(1) {
		t.Fatal("IsBig")
	}
}

func TestSum(t *testing.T) {
	if tiny.Sum(4) != 6 {
		t.Fatal("Sum")
	}
}
`)
	report := tinyReport(
		ReportMutation{Type: "CONDITIONALS_NEGATION", Status: statusRunnable, Line: 8, Column: 11},
		ReportMutation{Type: "INVERT_ASSIGNMENTS", Status: statusKilled, Line: 15, Column: 9},
	)
	cfg := Config{Dir: dir, Pkg: ".", TestPkg: "./judge", Report: report, Statuses: []string{statusRunnable, statusKilled},
		Timeout: 5 * time.Minute, Baseline: true, Out: &bytes.Buffer{}}
	got, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, Rechecked{File: "tiny.go", Line: 8, Column: 11, Type: "CONDITIONALS_NEGATION", Was: statusRunnable, Status: statusKilled, Test: "TestBig"}, got[0])
	assert.Equal(t, Rechecked{File: "tiny.go", Line: 15, Column: 9, Type: "INVERT_ASSIGNMENTS", Was: statusKilled, Status: statusKilled, Test: "TestSum"}, got[1])

	cfg.Run = "^TestSum$"
	got, err = Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, statusLived, got[0].Status, "TestBig does not run")
	assert.Equal(t, statusKilled, got[1].Status)

	// Without -test-pkg, tiny has no tests of its own: everything lives.
	cfg.TestPkg, cfg.Run = "", ""
	got, err = Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, statusLived, got[0].Status)
}

// A mutant that makes a test skip which ran without it is killed, as CI
// fails on a skip it does not allow; a test that skips anyway does not
// count, and without a baseline skips are not judged.
func TestRecheckSkipIsAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	dir := tinyModuleJudgedByTests(t, `func TestBigOrSkip(t *testing.T) {
	if !tiny.IsBig(20) {
		t.Skip("no big numbers here")
	}
}

func TestAlwaysSkips(t *testing.T) { t.Skip("not here") }
`)
	report := tinyReport(ReportMutation{Type: "CONDITIONALS_NEGATION", Status: statusRunnable, Line: 8, Column: 11})
	cfg := Config{Dir: dir, Pkg: ".", TestPkg: "./judge", Report: report, Statuses: []string{statusRunnable},
		Timeout: 5 * time.Minute, Baseline: true, Out: &bytes.Buffer{}}
	got, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, statusKilled, got[0].Status)
	assert.Equal(t, "skipped TestBigOrSkip", got[0].Test)

	cfg.Baseline = false
	got, err = Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, statusLived, got[0].Status, "no baseline, no skips to compare with")
}

func TestJudgeSkips(t *testing.T) {
	base := map[string]bool{"TestA": true}
	lived := Verdict{Status: statusLived, Skipped: []string{"TestA"}}
	assert.Equal(t, lived, judgeSkips(lived, base), "skips as the baseline did")
	assert.Equal(t, Verdict{Status: statusKilled, Test: "skipped TestB", Skipped: []string{"TestA", "TestB"}},
		judgeSkips(Verdict{Status: statusLived, Skipped: []string{"TestA", "TestB"}}, base))
	assert.Equal(t, Verdict{Status: statusLived, Skipped: []string{"TestB"}}, judgeSkips(Verdict{Status: statusLived, Skipped: []string{"TestB"}}, nil))
	killed := Verdict{Status: statusKilled, Test: "TestC", Skipped: []string{"TestB"}}
	assert.Equal(t, killed, judgeSkips(killed, base))

	v, _, err := verdictOf(nil, []byte("=== RUN   TestA\n--- SKIP: TestA (0.00s)\n    a_test.go:3: why\n=== RUN   TestB\n--- PASS: TestB (0.00s)\n    --- SKIP: TestB/sub (0.00s)\nPASS\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"TestA", "TestB/sub"}, v.Skipped)
}

// A file the report names but the tree no longer has makes its mutants
// stale without running anything.
func TestRecheckGoneFileIsStale(t *testing.T) {
	dir := tinyModule(t)
	report := Report{Files: []ReportFile{{Filename: "gone.go", Mutations: []ReportMutation{{Type: "ARITHMETIC_BASE", Status: statusLived, Line: 1, Column: 1}}}}}
	got, err := Run(context.Background(), Config{Dir: dir, Pkg: ".", Report: report, Statuses: []string{statusLived}, Timeout: time.Minute, Out: &bytes.Buffer{}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Rechecked{File: "gone.go", Line: 1, Column: 1, Type: "ARITHMETIC_BASE", Was: statusLived, Status: statusStale, Detail: "the file is gone"}, got[0])
}

// The command line: flags checked before any work, the summary and -o.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "r.json")
	write(t, report, `{"files":[{"file_name":"gone.go","mutations":[`+
		`{"type":"ARITHMETIC_BASE","status":"LIVED","line":1,"column":1},`+
		`{"type":"ARITHMETIC_BASE","status":"KILLED","line":2,"column":1}]}]}`)
	bad := filepath.Join(dir, "bad.json")
	write(t, bad, `{"files":[{"file_name":"a.go","mutations":[{"type":"X","status":"LIVED","line":1,"column":1}]}]}`)
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"-pkg", "."}, "-report and -pkg are required"},
		{[]string{"-report", report}, "-report and -pkg are required"},
		{[]string{"-report", report, "-pkg", ".", "-status", "SKIPPED"}, `-status: status "SKIPPED" cannot be re-checked`},
		{[]string{"-report", report, "-pkg", ".", "-run", "Test("}, "-run: error parsing regexp"},
		{[]string{"-report", report, "-pkg", ".", "-timeout", "0s"}, "-timeout 0s: must be positive"},
		{[]string{"-report", report, "-pkg", ".", "-workers", "0"}, "-workers 0: must be at least 1"},
		{[]string{"-report", report, "-pkg", ".", "-sample", "-1"}, "-sample -1: must not be negative"},
		{[]string{"-report", report, "-pkg", ".", "-seed", "-1"}, `invalid value "-1" for flag -seed`},
		{[]string{"-report", report, "-pkg", ".", "-files", "("}, "-files: error parsing regexp"},
		{[]string{"-report", report, "-pkg", ".", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-report", filepath.Join(dir, "none.json"), "-pkg", "./x"}, "read report (written by make mutation PKG=./x)"},
		{[]string{"-report", bad, "-pkg", "."}, `bad.json: parse report: files[0]: a.go mutations[0]: not a gremlins report: unknown mutant type "X"`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	}
	for _, c := range cases {
		// -no-baseline: were a check missing, the run would go on to the
		// report's one stale mutant and end at once, rather than test
		// this very package (itself running this test) as its baseline.
		err := run(context.Background(), append([]string{"-no-baseline"}, c.args...), &bytes.Buffer{}, &bytes.Buffer{})
		assert.ErrorContains(t, err, c.msg, c.args)
	}

	err := run(context.Background(), []string{"-report", report, "-pkg", dir, "-no-baseline", "-o", filepath.Join(dir, "none", "out.json")}, &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "write "+filepath.Join(dir, "none", "out.json"))

	var out bytes.Buffer
	result := filepath.Join(dir, "out.json")
	require.NoError(t, run(context.Background(), []string{"-report", report, "-pkg", dir, "-no-baseline", "-o", result}, &out, &bytes.Buffer{}))
	assert.Equal(t, ""+
		"       STALE ARITHMETIC_BASE at gone.go:1:1  (was LIVED, the file is gone)\n"+
		"\n"+
		"Re-checked 1 mutants: 0 killed, 0 lived, 0 timed out, 0 not viable, 1 stale\n"+
		"Report:\n"+
		"  Killed: 1, Lived: 1, Not covered: 0\n"+
		"  Timed out: 0, Not viable: 0\n"+
		"  Test efficacy: 50.00%\n"+
		"After the re-check:\n"+
		"  Killed: 1, Lived: 0, Not covered: 0\n"+
		"  Timed out: 0, Not viable: 0, Stale: 1\n"+
		"  Test efficacy: 100.00%\n", out.String())
	data, err := os.ReadFile(result)
	require.NoError(t, err)
	var res Result
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, Result{Report: report, Package: dir, Statuses: []string{"LIVED"},
		Mutants: []Rechecked{{File: "gone.go", Line: 1, Column: 1, Type: "ARITHMETIC_BASE", Was: "LIVED", Status: "STALE", Detail: "the file is gone"}},
		Before:  Counts{Killed: 1, Lived: 1, Efficacy: 50}, After: Counts{Killed: 1, Stale: 1, Efficacy: 100}}, res)

	// A sample: the estimate follows the summary and goes into -o.
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-report", report, "-pkg", dir, "-no-baseline", "-status", "LIVED,KILLED", "-sample", "1", "-seed", "9", "-o", result}, &out, &bytes.Buffer{}))
	assert.Contains(t, out.String(), "Re-checked 1 mutants:")
	assert.True(t, strings.HasSuffix(out.String(), "Sample of 1 of 2 mutants (seed 9):\n  Test efficacy: 0.00%, 95% interval 0.0% to 100.0%\n"), out.String())
	data, err = os.ReadFile(result)
	require.NoError(t, err)
	res = Result{}
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, &Estimate{Sampled: 1, Of: 2, Seed: 9, High: 100}, res.Sample)
}
