package main

import (
	"fmt"
	"io"
	"strings"
)

// Counts are the statuses of a report's mutants, and the efficacy
// gremlins and docs/mutation.md define: killed / (killed + lived).
type Counts struct {
	Killed     int     `json:"killed"`
	Lived      int     `json:"lived"`
	TimedOut   int     `json:"timed_out"`
	NotCovered int     `json:"not_covered"`
	NotViable  int     `json:"not_viable"`
	Skipped    int     `json:"skipped,omitempty"`
	Stale      int     `json:"stale,omitempty"`
	Efficacy   float64 `json:"test_efficacy"`
}

func (c *Counts) add(status string, n int) {
	switch status {
	case statusKilled:
		c.Killed += n
	case statusLived:
		c.Lived += n
	case statusTimedOut:
		c.TimedOut += n
	case statusNotCovered:
		c.NotCovered += n
	case statusNotViable:
		c.NotViable += n
	case statusStale:
		c.Stale += n
	default: // SKIPPED and RUNNABLE: outside every score
		c.Skipped += n
	}
}

func (c *Counts) score() {
	c.Efficacy = 0
	if c.Killed+c.Lived > 0 {
		c.Efficacy = float64(c.Killed) / float64(c.Killed+c.Lived) * 100
	}
}

// Tally counts a report's mutants (before) and the same mutants with the
// re-checked ones moved to their new status (after).
func Tally(r Report, rechecked []Rechecked) (before, after Counts) {
	for _, m := range r.Mutants() {
		before.add(m.Status, 1)
	}
	after = before
	for _, m := range rechecked {
		after.add(m.Was, -1)
		after.add(m.Status, 1)
	}
	before.score()
	after.score()
	return before, after
}

// printMutant writes one line in gremlins' console format (the status
// right-aligned in 12 columns, the type, the place), then what changed.
func printMutant(w io.Writer, r Rechecked) {
	note := "was " + r.Was
	if r.Test != "" {
		note += ", failed: " + r.Test
	}
	if r.Status == statusStale {
		note += ", " + r.Detail
	}
	fmt.Fprintf(w, "%12s %s at %s:%d:%d  (%s)\n", r.Status, r.Type, r.File, r.Line, r.Column, note)
	if r.Detail != "" && r.Status != statusStale {
		for _, line := range strings.Split(strings.TrimRight(r.Detail, "\n"), "\n") {
			fmt.Fprintf(w, "\t| %s\n", line)
		}
	}
}

// printSummary writes the report's counts and the counts after the
// re-check, as gremlins words its own summary.
func printSummary(w io.Writer, rechecked []Rechecked, before, after Counts) {
	var n Counts
	for _, r := range rechecked {
		n.add(r.Status, 1)
	}
	fmt.Fprintf(w, "\nRe-checked %d mutants: %d killed, %d lived, %d timed out, %d not viable, %d stale\n",
		len(rechecked), n.Killed, n.Lived, n.TimedOut, n.NotViable, n.Stale)
	printCounts(w, "Report", before)
	printCounts(w, "After the re-check", after)
}

func printCounts(w io.Writer, title string, c Counts) {
	fmt.Fprintf(w, "%s:\n  Killed: %d, Lived: %d, Not covered: %d\n  Timed out: %d, Not viable: %d",
		title, c.Killed, c.Lived, c.NotCovered, c.TimedOut, c.NotViable)
	if c.Stale > 0 {
		fmt.Fprintf(w, ", Stale: %d", c.Stale)
	}
	fmt.Fprintf(w, "\n  Test efficacy: %.2f%%\n", c.Efficacy)
}
