package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output events
}

type skip struct{ pkg, test, reason string }

// pkgLog is what one package printed so far.
type pkgLog struct {
	all   []string            // every line, for a package that fails outside a test
	tests map[string][]string // per test, for a test that fails
}

// filter reads the events from r and prints what plain go test prints:
// build output, each package's summary, skip and failure lines, and the
// whole output of a failed test or package. It returns the skipped tests
// and whether a test or package failed.
func filter(r io.Reader, w io.Writer) (skips []skip, failed bool) {
	logs := map[string]*pkgLog{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not an event: go test's own message
			continue
		}
		if ev.Action == "build-output" || ev.Action == "build-fail" {
			fmt.Fprint(w, ev.Output)
			continue
		}
		l := logs[ev.Package]
		if l == nil {
			l = &pkgLog{tests: map[string][]string{}}
			logs[ev.Package] = l
		}
		switch ev.Action {
		case "output":
			l.all = append(l.all, ev.Output)
			if ev.Test != "" {
				l.tests[ev.Test] = append(l.tests[ev.Test], ev.Output)
			} else if summaryLine(ev.Output) {
				fmt.Fprint(w, ev.Output)
			}
		case "skip":
			if ev.Test != "" {
				skips = append(skips, skip{pkg: strings.TrimPrefix(ev.Package, module), test: ev.Test, reason: skipReason(l.tests[ev.Test])})
			}
		case "fail":
			failed = true
			if ev.Test != "" {
				fmt.Fprint(w, strings.Join(l.tests[ev.Test], ""))
			} else if !anyTestFailed(l) {
				fmt.Fprint(w, strings.Join(l.all, "")) // a panic, a timeout, TestMain
			}
		}
		if ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
			delete(logs, ev.Package)
		}
	}
	return skips, failed
}

// summaryLine tells go test's per-package lines ("ok", "FAIL", "?") from
// the test binary's own output.
func summaryLine(s string) bool {
	for _, p := range []string{"ok  ", "FAIL", "?   "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func anyTestFailed(l *pkgLog) bool {
	for _, lines := range l.tests {
		for _, line := range lines {
			if strings.Contains(line, "--- FAIL") {
				return true
			}
		}
	}
	return false
}

// skipReason is what the test logged before it skipped, on one line.
func skipReason(lines []string) string {
	var out []string
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}
