package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gremlins' own sample of its output format parses, with every mutant.
func TestParseGremlinsSample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(gremlinsDir(t), "internal/report/testdata/normal_output.json"))
	require.NoError(t, err)
	r, err := ParseReport(data)
	require.NoError(t, err)
	assert.Equal(t, "example.com/go/module", r.GoModule)
	ms := r.Mutants()
	require.Len(t, ms, 12)
	assert.Equal(t, Mutant{File: "file1.go", ReportMutation: ReportMutation{Type: "ARITHMETIC_BASE", Status: "LIVED", Line: 20, Column: 8}}, ms[1])
	assert.Equal(t, "file3.go:100:4", ms[11].Pos())
}

func TestParseReportRefusesBadInput(t *testing.T) {
	mutant := func(typ, status string, line, col int) string {
		b, _ := json.Marshal(map[string]any{"files": []any{map[string]any{"file_name": "a.go",
			"mutations": []any{map[string]any{"type": typ, "status": status, "line": line, "column": col}}}}})
		return string(b)
	}
	file := func(name string) string {
		return `{"files":[{"file_name":` + name + `,"mutations":[]}]}`
	}
	cases := []struct{ name, data, msg string }{
		{"empty", ``, "unexpected end of JSON input"},
		{"not JSON", `KILLED at a.go:1:1`, "invalid character"},
		{"truncated", `{"files":[{"file_name":"a.go"`, "unexpected end of JSON input"},
		{"a list", `[]`, "cannot unmarshal array"},
		{"no files", `{"go_module":"m"}`, `no "files" list`},
		{"files not a list", `{"files":{}}`, "cannot unmarshal object"},
		{"line as text", `{"files":[{"file_name":"a.go","mutations":[{"line":"3"}]}]}`, "cannot unmarshal string"},
		{"unknown type", mutant("SWAP", "LIVED", 1, 1), `a.go mutations[0]: not a gremlins report: unknown mutant type "SWAP"`},
		{"unknown status", mutant("ARITHMETIC_BASE", "lived", 1, 1), `unknown status "lived"`},
		{"no status", mutant("ARITHMETIC_BASE", "", 1, 1), `unknown status ""`},
		{"line 0", mutant("ARITHMETIC_BASE", "LIVED", 0, 1), "position 0:1 is not a line and column"},
		{"negative column", mutant("ARITHMETIC_BASE", "LIVED", 3, -1), "position 3:-1"},
		{"no file name", file(`""`), `files[0]: not a gremlins report: file_name "" is not a path inside the package`},
		{"absolute file name", file(`"/etc/passwd.go"`), `file_name "/etc/passwd.go" is not a path inside the package`},
		{"file above the package", file(`"../x.go"`), `file_name "../x.go" is not a path inside the package`},
		{"not Go", file(`"go.mod"`), `file_name "go.mod" is not a Go file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseReport([]byte(c.data))
			require.ErrorIs(t, err, errBadReport)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestParseStatuses(t *testing.T) {
	got, err := ParseStatuses("LIVED")
	require.NoError(t, err)
	assert.Equal(t, []string{"LIVED"}, got)
	got, err = ParseStatuses(" lived, TIMED  OUT ,NOT COVERED,LIVED,")
	require.NoError(t, err)
	assert.Equal(t, []string{"LIVED", "TIMED OUT", "NOT COVERED"}, got)
	got, err = ParseStatuses("killed,runnable")
	require.NoError(t, err)
	assert.Equal(t, []string{"KILLED", "RUNNABLE"}, got, "every mutant run for real")
	got, err = ParseStatuses("not viable")
	require.NoError(t, err)
	assert.Equal(t, []string{"NOT VIABLE"}, got, "judged while the tree did not build")
	for _, bad := range []string{"SKIPPED", "STALE", "DEAD"} {
		_, err = ParseStatuses(bad)
		assert.ErrorContains(t, err, "cannot be re-checked: use LIVED, TIMED OUT, NOT COVERED, KILLED, RUNNABLE, NOT VIABLE", bad)
	}
	_, err = ParseStatuses(" , ")
	assert.ErrorContains(t, err, "no status to re-check")
}

// The counts before and after follow gremlins: efficacy is killed over
// killed and lived; timed out, not covered, not viable and stale stay out.
func TestTally(t *testing.T) {
	r := Report{Files: []ReportFile{{Filename: "a.go", Mutations: []ReportMutation{
		{Status: statusKilled}, {Status: statusKilled}, {Status: statusKilled},
		{Status: statusLived}, {Status: statusLived}, {Status: statusLived},
		{Status: statusTimedOut}, {Status: statusNotCovered}, {Status: statusNotViable},
	}}}}
	before, after := Tally(r, []Rechecked{
		{Was: statusLived, Status: statusKilled},
		{Was: statusLived, Status: statusStale},
		{Was: statusTimedOut, Status: statusKilled},
		{Was: statusNotCovered, Status: statusLived},
	})
	assert.Equal(t, Counts{Killed: 3, Lived: 3, TimedOut: 1, NotCovered: 1, NotViable: 1, Efficacy: 50}, before)
	assert.InDelta(t, 71.43, after.Efficacy, 0.01)
	after.Efficacy = 0
	assert.Equal(t, Counts{Killed: 5, Lived: 2, NotViable: 1, Stale: 1}, after)

	none, _ := Tally(Report{}, nil)
	assert.Zero(t, none.Efficacy)
}

func FuzzParseReport(f *testing.F) {
	f.Add([]byte(`{"files":[{"file_name":"a.go","mutations":[{"type":"ARITHMETIC_BASE","status":"LIVED","line":1,"column":2}]}]}`))
	f.Add([]byte(`{"files":[]}`))
	f.Add([]byte(`{"files":[{"file_name":"../a.go"}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReport(data)
		if err != nil {
			require.ErrorIs(t, err, errBadReport)
			return
		}
		for _, m := range r.Mutants() {
			require.NoError(t, checkMutation(m.ReportMutation))
			_, _ = Apply([]byte("package p\n\nvar x = a + b\n"), m.Type, m.Line, m.Column)
		}
	})
}

// A re-check's -o output reads as the report of the mutants it judged,
// each with the status it ended with, so a second judge takes the
// survivors of the first.
func TestParseReportReadsARecheck(t *testing.T) {
	res := Result{Report: "r.json", Package: "./p", Statuses: []string{statusRunnable}, Mutants: []Rechecked{
		{File: "a.go", Line: 3, Column: 9, Type: "CONDITIONALS_NEGATION", Was: statusRunnable, Status: statusKilled, Test: "TestA"},
		{File: "a.go", Line: 5, Column: 2, Type: "ARITHMETIC_BASE", Was: statusNotCovered, Status: statusLived},
		{File: "b.go", Line: 1, Column: 1, Type: "INVERT_NEGATIVES", Was: statusRunnable, Status: statusStale, Detail: "moved"},
		{File: "a.go", Line: 8, Column: 4, Type: "CONDITIONALS_BOUNDARY", Was: statusRunnable, Status: statusNotViable},
	}}
	data, err := json.Marshal(res)
	require.NoError(t, err)
	r, err := ParseReport(data)
	require.NoError(t, err)
	assert.Equal(t, Report{Files: []ReportFile{
		{Filename: "a.go", Mutations: []ReportMutation{
			{Type: "CONDITIONALS_NEGATION", Status: statusKilled, Line: 3, Column: 9},
			{Type: "ARITHMETIC_BASE", Status: statusLived, Line: 5, Column: 2}}},
		{Filename: "b.go", Mutations: []ReportMutation{{Type: "INVERT_NEGATIVES", Status: statusStale, Line: 1, Column: 1}}},
		{Filename: "a.go", Mutations: []ReportMutation{{Type: "CONDITIONALS_BOUNDARY", Status: statusNotViable, Line: 8, Column: 4}}},
	}}, r)
	before, _ := Tally(r, nil)
	assert.Equal(t, Counts{Killed: 1, Lived: 1, Stale: 1, NotViable: 1, Efficacy: 50}, before)

	// A re-check that judged nothing is an empty report, not a bad one.
	r, err = ParseReport([]byte(`{"report":"r.json","mutants":[]}`))
	require.NoError(t, err)
	assert.Empty(t, r.Mutants())

	// Its mutants are checked as a report's are.
	for _, bad := range []string{
		`{"mutants":[{"file":"a.go","line":1,"column":1,"type":"NOPE","status":"LIVED"}]}`,
		`{"mutants":[{"file":"../a.go","line":1,"column":1,"type":"ARITHMETIC_BASE","status":"LIVED"}]}`,
		`{"mutants":[{"file":"a.go","line":0,"column":1,"type":"ARITHMETIC_BASE","status":"LIVED"}]}`,
		`{"mutants":null}`,
	} {
		_, err := ParseReport([]byte(bad))
		assert.ErrorIs(t, err, errBadReport, bad)
	}
}
