package main

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// events is a go test -json stream: one package with a pass, a skip, a
// failing test and a skipped subtest; another with no test files.
const events = `{"Action":"start","Package":"github.com/skillgate/skillgate/sandbox"}
{"Action":"run","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestA"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestA"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestB","Output":"    b_test.go:9: kubectl not installed\n"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestB"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestC","Output":"    c_test.go:3: boom\n"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}
{"Action":"fail","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestC"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestD/sub","Output":"    d_test.go:4: root only\n"}
{"Action":"skip","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestD/sub"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Output":"FAIL\n"}
{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Output":"FAIL\tgithub.com/skillgate/skillgate/sandbox\t0.1s\n"}
{"Action":"fail","Package":"github.com/skillgate/skillgate/sandbox"}
{"Action":"output","Package":"github.com/skillgate/skillgate/metrics/x","Output":"?   \tgithub.com/skillgate/skillgate/metrics/x\t[no test files]\n"}
{"Action":"skip","Package":"github.com/skillgate/skillgate/metrics/x"}
not json: a message of go test's own
`

func TestFilter(t *testing.T) {
	var out bytes.Buffer
	skips, failed := filter(strings.NewReader(events), &out)
	assert.True(t, failed)
	assert.Equal(t, []skip{
		{pkg: "sandbox", test: "TestB", reason: "b_test.go:9: kubectl not installed"},
		{pkg: "sandbox", test: "TestD/sub", reason: "d_test.go:4: root only"},
	}, skips, "package-level skips (no test files) are no test's")
	assert.Equal(t, "    c_test.go:3: boom\n--- FAIL: TestC (0.00s)\nFAIL\n"+
		"FAIL\tgithub.com/skillgate/skillgate/sandbox\t0.1s\n"+
		"?   \tgithub.com/skillgate/skillgate/metrics/x\t[no test files]\n"+
		"not json: a message of go test's own\n", out.String(), "a passing test's output is not printed")
}

func TestFilterPrintsAPackageThatFailsOutsideATest(t *testing.T) {
	var out bytes.Buffer
	_, failed := filter(strings.NewReader(`{"Action":"output","Package":"p","Output":"panic: in TestMain\n"}
{"Action":"output","Package":"p","Output":"goroutine 1\n"}
{"Action":"fail","Package":"p"}
`), &out)
	assert.True(t, failed)
	assert.Equal(t, "panic: in TestMain\ngoroutine 1\n", out.String())
}

func TestParseAllowed(t *testing.T) {
	got, err := parseAllowed(strings.NewReader("# comment\n\nsandbox  TestD/*  root mode maps its own range # why\n"), "f")
	require.NoError(t, err)
	assert.Equal(t, []allowedSkip{{pkg: "sandbox", test: "TestD/*", reason: "root mode maps its own range"}}, got)
	assert.True(t, isAllowed(skip{pkg: "sandbox", test: "TestD/sub"}, got, ""))
	assert.True(t, isAllowed(skip{pkg: "sandbox", test: "TestD/sub"}, got, "rootless"), "an entry without stages holds in every stage")
	assert.False(t, isAllowed(skip{pkg: "sandbox", test: "TestD"}, got, ""))
	assert.False(t, isAllowed(skip{pkg: "deploy", test: "TestD/sub"}, got, ""))

	for _, bad := range []string{"sandbox TestX\n", "sandbox\n", "sandbox Test[ reason\n",
		"sandbox TestX @unit\n", "sandbox TestX @ reason\n", "sandbox TestX @unit, reason\n", "sandbox TestX @Unit reason\n",
		"sandbox TestX @unit,,scratch reason\n", "sandbox TestX @a_b reason\n", "sandbox TestX @a/b reason\n"} {
		_, err := parseAllowed(strings.NewReader(bad), "f")
		assert.Error(t, err, bad)
	}
}

// TestAllowedStages: an entry scoped to stages allows its skip in those
// stages only; "@" is read as a scope only in the third field.
func TestAllowedStages(t *testing.T) {
	got, err := parseAllowed(strings.NewReader(
		"sandbox TestRootOnly @unit,scratch needs root\n"+
			"sandbox TestRootless @rootless no cgroup here\n"+
			"sandbox TestMail   ask @admin first\n"+
			"deploy  TestAll    @cgroup2,z-9 anywhere but there\n"), "f")
	require.NoError(t, err)
	assert.Equal(t, []allowedSkip{
		{pkg: "sandbox", test: "TestRootOnly", stages: []string{"unit", "scratch"}, reason: "needs root"},
		{pkg: "sandbox", test: "TestRootless", stages: []string{"rootless"}, reason: "no cgroup here"},
		{pkg: "sandbox", test: "TestMail", reason: "ask @admin first"},
		{pkg: "deploy", test: "TestAll", stages: []string{"cgroup2", "z-9"}, reason: "anywhere but there"},
	}, got)
	for _, tc := range []struct {
		test, stage string
		want        bool
	}{
		{"TestRootOnly", "unit", true},
		{"TestRootOnly", "scratch", true},
		{"TestRootOnly", "rootless", false},
		{"TestRootOnly", "", false},
		{"TestRootless", "rootless", true},
		{"TestRootless", "unit", false},
		{"TestMail", "rootless", true},
		{"TestMail", "", true},
	} {
		assert.Equal(t, tc.want, isAllowed(skip{pkg: "sandbox", test: tc.test}, got, tc.stage), "%s in %q", tc.test, tc.stage)
	}
	assert.False(t, isAllowed(skip{pkg: "sandbox", test: "TestAll"}, got, "cgroup2"), "another package's entry")

	// A second entry for the same test, scoped elsewhere, does not hide
	// the first.
	both, err := parseAllowed(strings.NewReader("sandbox TestX @unit a\nsandbox TestX @rootless b\n"), "f")
	require.NoError(t, err)
	assert.True(t, isAllowed(skip{pkg: "sandbox", test: "TestX"}, both, "unit"))
	assert.True(t, isAllowed(skip{pkg: "sandbox", test: "TestX"}, both, "rootless"))
	assert.False(t, isAllowed(skip{pkg: "sandbox", test: "TestX"}, both, "scratch"))
}

// TestReportByStage: the same skip is allowed in one stage and fails
// another in strict mode.
func TestReportByStage(t *testing.T) {
	allowed := []allowedSkip{{pkg: "sandbox", test: "TestD", stages: []string{"unit"}, reason: "r"}}
	skips := []skip{{pkg: "sandbox", test: "TestD", reason: "why"}}
	var out bytes.Buffer
	assert.Equal(t, 0, check{allowed: allowed, stage: "unit", strict: true}.judge(skips, 0, &out))
	assert.Equal(t, "skipped tests (1):\n  allowed     sandbox TestD: why\n", out.String())
	out.Reset()
	assert.Equal(t, 1, check{allowed: allowed, stage: "rootless", strict: true}.judge(skips, 0, &out))
	assert.Equal(t, "skipped tests (1):\n  NOT ALLOWED sandbox TestD: why\n"+
		"skipcheck: 1 skip(s) not listed in the allowed skips, and SKILLGATE_REQUIRE_NO_SKIPS=1\n", out.String())
}

// TestStream reads events from a reader instead of running a command (a
// test binary's output through test2json): a failure in the stream fails,
// and an unlisted skip fails in strict mode only.
func TestStream(t *testing.T) {
	pass := `{"Action":"skip","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestK"}
{"Action":"pass","Package":"github.com/skillgate/skillgate/sandbox"}
`
	fail := `{"Action":"output","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestF","Output":"--- FAIL: TestF (0.00s)\n"}
{"Action":"fail","Package":"github.com/skillgate/skillgate/sandbox","Test":"TestF"}
{"Action":"fail","Package":"github.com/skillgate/skillgate/sandbox"}
`
	allowK := []allowedSkip{{pkg: "sandbox", test: "TestK", stages: []string{"rootless"}, reason: "r"}}
	var out bytes.Buffer
	assert.Equal(t, 0, check{}.stream(strings.NewReader(pass), &out))
	assert.Contains(t, out.String(), "NOT ALLOWED sandbox TestK")
	assert.Equal(t, 1, check{strict: true}.stream(strings.NewReader(pass), &out))
	assert.Equal(t, 0, check{allowed: allowK, stage: "rootless", strict: true}.stream(strings.NewReader(pass), &out))
	assert.Equal(t, 1, check{allowed: allowK, stage: "unit", strict: true}.stream(strings.NewReader(pass), &out))
	assert.Equal(t, 1, check{}.stream(strings.NewReader(fail), &out))
	assert.Equal(t, 0, check{}.stream(strings.NewReader(""), &out), "nothing ran, nothing failed")
}

// TestRun: the command's status wins; in strict mode an unlisted skip
// fails an otherwise green run, a listed one does not.
func TestRun(t *testing.T) {
	script := func(status string) []string {
		return []string{"sh", "-c", `printf '%s\n' '{"Action":"skip","Package":"github.com/skillgate/skillgate/deploy","Test":"TestK"}'; exit ` + status}
	}
	allowK := []allowedSkip{{pkg: "deploy", test: "TestK", reason: "r"}}
	var out, errOut bytes.Buffer
	lax, strict := check{}, check{strict: true}
	allowed := check{allowed: allowK, strict: true}
	assert.Equal(t, 0, lax.run(script("0"), &out, &errOut))
	assert.Contains(t, out.String(), "NOT ALLOWED deploy TestK")
	assert.Equal(t, 1, strict.run(script("0"), &out, &errOut))
	assert.Equal(t, 0, allowed.run(script("0"), &out, &errOut))
	assert.Equal(t, 3, allowed.run(script("3"), &out, &errOut))
	assert.Equal(t, 3, strict.run(script("3"), &out, &errOut))
	assert.Equal(t, 2, strict.run([]string{"/nonexistent/go"}, &out, &errOut))
}

// FuzzParseAllowed: any file parses or is refused; an entry read always
// has a package, a valid pattern and a reason.
func FuzzParseAllowed(f *testing.F) {
	f.Add("sandbox TestX/* why\n# c\n")
	f.Add("a [ b\n")
	f.Add("sandbox TestX @unit,rootless why\n")
	f.Fuzz(func(t *testing.T, data string) {
		got, err := parseAllowed(strings.NewReader(data), "f")
		if err != nil {
			return
		}
		for _, a := range got {
			for _, st := range a.stages {
				assert.True(t, validStage(st), "stage %q", st)
			}
			assert.NotEmpty(t, a.pkg)
			assert.NotEmpty(t, a.reason)
			_, perr := path.Match(a.test, "")
			assert.NoError(t, perr)
		}
	})
}

// TestReportSortsSkips: the list is sorted by package, then test.
func TestReportSortsSkips(t *testing.T) {
	skips := []skip{{pkg: "sandbox", test: "TestB"}, {pkg: "deploy", test: "TestZ"}, {pkg: "sandbox", test: "TestA"}, {pkg: "sandbox", test: "TestA/sub"}}
	var out bytes.Buffer
	assert.Equal(t, 4, report(skips, nil, "", &out))
	assert.Equal(t, "skipped tests (4):\n"+
		"  NOT ALLOWED deploy TestZ: \n"+
		"  NOT ALLOWED sandbox TestA: \n"+
		"  NOT ALLOWED sandbox TestA/sub: \n"+
		"  NOT ALLOWED sandbox TestB: \n", out.String())
}

// TestReadAllowed reads the file named, and fails on one that is missing.
func TestReadAllowed(t *testing.T) {
	name := filepath.Join(t.TempDir(), "allowed-skips")
	require.NoError(t, os.WriteFile(name, []byte("sandbox TestX @rootless why\n"), 0o600))
	got, err := readAllowed(name)
	require.NoError(t, err)
	assert.Equal(t, []allowedSkip{{pkg: "sandbox", test: "TestX", stages: []string{"rootless"}, reason: "why"}}, got)
	_, err = readAllowed(name + ".missing")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestParseAllowedNamesTheLine: an error names the file's line, counted
// from 1 with comments and blank lines; stage names take each end of
// their ranges.
func TestParseAllowedNamesTheLine(t *testing.T) {
	_, err := parseAllowed(strings.NewReader("# c\n\nsandbox TestX why\nsandbox TestY\n"), "f")
	assert.ErrorContains(t, err, "f:4: want: package test")
	got, err := parseAllowed(strings.NewReader("sandbox TestX @a0-z9,0,9,a,z why\n"), "f")
	require.NoError(t, err)
	assert.Equal(t, []string{"a0-z9", "0", "9", "a", "z"}, got[0].stages)
	for _, bad := range []string{"/", ":", "`", "{", "A", "_"} {
		_, err := parseAllowed(strings.NewReader("sandbox TestX @"+bad+" why\n"), "f")
		assert.ErrorContains(t, err, "f:1: stage", bad)
	}
}
