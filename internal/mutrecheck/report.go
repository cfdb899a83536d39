package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The statuses gremlins v0.6.0 writes (mutator.Status.String), and the
// one this tool adds for a mutant whose token is no longer at its place.
const (
	statusKilled     = "KILLED"
	statusLived      = "LIVED"
	statusNotCovered = "NOT COVERED"
	statusNotViable  = "NOT VIABLE"
	statusTimedOut   = "TIMED OUT"
	statusSkipped    = "SKIPPED"
	statusRunnable   = "RUNNABLE"
	statusStale      = "STALE"
)

// reportStatuses are the statuses a gremlins report may hold.
// A re-check's output adds STALE.
var reportStatuses = []string{statusKilled, statusLived, statusNotCovered, statusNotViable, statusTimedOut, statusSkipped, statusRunnable, statusStale}

// recheckable are the statuses whose mutants a re-check may run again:
// the ones gremlins did not see killed, and (to run every mutant for real)
// the killed ones and those of a dry run (`gremlins unleash --dry-run`
// lists each as RUNNABLE or NOT COVERED): gremlins times each mutant by
// its first coverage run, and counts one that does not build as killed.
// NOT VIABLE too: a re-check run while the tree itself did not build (a
// test file being written) calls every mutant of that moment so.
var recheckable = []string{statusLived, statusTimedOut, statusNotCovered, statusKilled, statusRunnable, statusNotViable}

// Report is the part of gremlins' JSON report (internal/report/internal
// OutputResult in v0.6.0) this tool reads. The per-mutant list is the
// source of truth: the totals at the top have no timed-out count.
type Report struct {
	GoModule      string       `json:"go_module"`
	Files         []ReportFile `json:"files"`
	TestEfficacy  float64      `json:"test_efficacy"`
	MutantsKilled int          `json:"mutants_killed"`
	MutantsLived  int          `json:"mutants_lived"`
}

// ReportFile lists the mutants of one file; its name is relative to the
// package directory gremlins was given.
type ReportFile struct {
	Filename  string           `json:"file_name"`
	Mutations []ReportMutation `json:"mutations"`
}

// ReportMutation is one mutant: its type (mutator.Type.String), status,
// and the 1-based line and byte column of the token it changes.
type ReportMutation struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// Mutant is one mutant of a report with the file it belongs to.
type Mutant struct {
	File string
	ReportMutation
}

// Pos is the mutant's place as gremlins prints it: file:line:col.
func (m Mutant) Pos() string {
	return fmt.Sprintf("%s:%d:%d", m.File, m.Line, m.Column)
}

var errBadReport = errors.New("not a gremlins report")

// ParseReport decodes a gremlins JSON report and checks every mutant in
// it, so that a wrong or truncated file is refused with the place of the
// first problem rather than re-checked in part.
//
// A re-check's own -o output is read as the report of the mutants it
// judged, each with the status it ended with: a second judge (another
// package's tests, or the whole suite after a -run subset) then takes
// the survivors of the first, and its summary counts both.
func ParseReport(data []byte) (Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return Report{}, fmt.Errorf("parse report: %w: %w", errBadReport, err)
	}
	if r.Files == nil {
		if res, ok := recheckResult(data); ok {
			r = res.asReport()
		}
	}
	if r.Files == nil {
		return Report{}, fmt.Errorf("parse report: %w: no \"files\" list", errBadReport)
	}
	for i, f := range r.Files {
		if err := checkFile(f); err != nil {
			return Report{}, fmt.Errorf("parse report: files[%d]: %w", i, err)
		}
	}
	return r, nil
}

func checkFile(f ReportFile) error {
	if f.Filename == "" || filepath.IsAbs(f.Filename) || strings.HasPrefix(filepath.Clean(f.Filename), "..") {
		return fmt.Errorf("%w: file_name %q is not a path inside the package", errBadReport, f.Filename)
	}
	if !strings.HasSuffix(f.Filename, ".go") {
		return fmt.Errorf("%w: file_name %q is not a Go file", errBadReport, f.Filename)
	}
	for j, m := range f.Mutations {
		if err := checkMutation(m); err != nil {
			return fmt.Errorf("%s mutations[%d]: %w", f.Filename, j, err)
		}
	}
	return nil
}

func checkMutation(m ReportMutation) error {
	if _, ok := mutations[m.Type]; !ok {
		return fmt.Errorf("%w: unknown mutant type %q", errBadReport, m.Type)
	}
	if !slices.Contains(reportStatuses, m.Status) {
		return fmt.Errorf("%w: unknown status %q", errBadReport, m.Status)
	}
	if m.Line < 1 || m.Column < 1 {
		return fmt.Errorf("%w: position %d:%d is not a line and column (both start at 1)", errBadReport, m.Line, m.Column)
	}
	return nil
}

// recheckResult decodes data as a re-check's -o output, if it is one.
func recheckResult(data []byte) (Result, bool) {
	var res struct {
		Result
		Mutants *[]Rechecked `json:"mutants"`
	}
	if json.Unmarshal(data, &res) != nil || res.Mutants == nil {
		return Result{}, false
	}
	res.Result.Mutants = *res.Mutants
	return res.Result, true
}

// asReport lists a re-check's mutants by file, in their order, each with
// the status the re-check gave it.
func (res Result) asReport() Report {
	r := Report{Files: []ReportFile{}}
	for _, m := range res.Mutants {
		n := len(r.Files)
		if n == 0 || r.Files[n-1].Filename != m.File {
			r.Files = append(r.Files, ReportFile{Filename: m.File})
			n++
		}
		r.Files[n-1].Mutations = append(r.Files[n-1].Mutations, ReportMutation{Type: m.Type, Status: m.Status, Line: m.Line, Column: m.Column})
	}
	return r
}

// Mutants lists the report's mutants in its order.
func (r Report) Mutants() []Mutant {
	var out []Mutant
	for _, f := range r.Files {
		for _, m := range f.Mutations {
			out = append(out, Mutant{File: f.Filename, ReportMutation: m})
		}
	}
	return out
}

// ParseStatuses reads the -status flag: a comma-separated list of the
// statuses to re-check.
func ParseStatuses(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		st := strings.ToUpper(strings.Join(strings.Fields(part), " "))
		if st == "" {
			continue
		}
		if !slices.Contains(recheckable, st) {
			return nil, fmt.Errorf("status %q cannot be re-checked: use %s", st, strings.Join(recheckable, ", "))
		}
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no status to re-check: use %s", strings.Join(recheckable, ", "))
	}
	return out, nil
}
