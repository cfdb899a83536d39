package main

import (
	"bytes"
	"path"
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
	skips := filter(strings.NewReader(events), &out)
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
	filter(strings.NewReader(`{"Action":"output","Package":"p","Output":"panic: in TestMain\n"}
{"Action":"output","Package":"p","Output":"goroutine 1\n"}
{"Action":"fail","Package":"p"}
`), &out)
	assert.Equal(t, "panic: in TestMain\ngoroutine 1\n", out.String())
}

func TestParseAllowed(t *testing.T) {
	got, err := parseAllowed(strings.NewReader("# comment\n\nsandbox  TestD/*  root mode maps its own range # why\n"), "f")
	require.NoError(t, err)
	assert.Equal(t, []allowedSkip{{pkg: "sandbox", test: "TestD/*", reason: "root mode maps its own range"}}, got)
	assert.True(t, isAllowed(skip{pkg: "sandbox", test: "TestD/sub"}, got))
	assert.False(t, isAllowed(skip{pkg: "sandbox", test: "TestD"}, got))
	assert.False(t, isAllowed(skip{pkg: "deploy", test: "TestD/sub"}, got))

	for _, bad := range []string{"sandbox TestX\n", "sandbox\n", "sandbox Test[ reason\n"} {
		_, err := parseAllowed(strings.NewReader(bad), "f")
		assert.Error(t, err, bad)
	}
}

// TestRun: the command's status wins; in strict mode an unlisted skip
// fails an otherwise green run, a listed one does not.
func TestRun(t *testing.T) {
	script := func(status string) []string {
		return []string{"sh", "-c", `printf '%s\n' '{"Action":"skip","Package":"github.com/skillgate/skillgate/deploy","Test":"TestK"}'; exit ` + status}
	}
	allowK := []allowedSkip{{pkg: "deploy", test: "TestK", reason: "r"}}
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run(script("0"), nil, false, &out, &errOut))
	assert.Contains(t, out.String(), "NOT ALLOWED deploy TestK")
	assert.Equal(t, 1, run(script("0"), nil, true, &out, &errOut))
	assert.Equal(t, 0, run(script("0"), allowK, true, &out, &errOut))
	assert.Equal(t, 3, run(script("3"), allowK, true, &out, &errOut))
	assert.Equal(t, 3, run(script("3"), nil, true, &out, &errOut))
	assert.Equal(t, 2, run([]string{"/nonexistent/go"}, nil, true, &out, &errOut))
}

// FuzzParseAllowed: any file parses or is refused; an entry read always
// has a package, a valid pattern and a reason.
func FuzzParseAllowed(f *testing.F) {
	f.Add("sandbox TestX/* why\n# c\n")
	f.Add("a [ b\n")
	f.Fuzz(func(t *testing.T, data string) {
		got, err := parseAllowed(strings.NewReader(data), "f")
		if err != nil {
			return
		}
		for _, a := range got {
			assert.NotEmpty(t, a.pkg)
			assert.NotEmpty(t, a.reason)
			_, perr := path.Match(a.test, "")
			assert.NoError(t, perr)
		}
	})
}
