package main

import (
	"fmt"
	"io"
	"math"
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

// countsOf counts the re-checked mutants by the status each ended with.
func countsOf(rechecked []Rechecked) Counts {
	var n Counts
	for _, r := range rechecked {
		n.add(r.Status, 1)
	}
	n.score()
	return n
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
	n := countsOf(rechecked)
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

// Estimate is what a random sample of the selected mutants says of the
// efficacy of them all: the sample's own efficacy and the 95% Wilson
// score interval around it, which stays inside 0–100% and is honest for
// the small samples and high scores mutation testing gives.
type Estimate struct {
	Sampled  int     `json:"sampled"`
	Of       int     `json:"of"`
	Seed     uint64  `json:"seed"`
	Efficacy float64 `json:"test_efficacy"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
}

// estimate is the Estimate of the selection of size of that rechecked,
// drawn with seed, stands for.
func estimate(rechecked []Rechecked, of int, seed uint64) Estimate {
	n := countsOf(rechecked)
	low, high := wilson(n.Killed, n.Killed+n.Lived)
	return Estimate{Sampled: len(rechecked), Of: of, Seed: seed, Efficacy: n.Efficacy, Low: low * 100, High: high * 100}
}

// wilson is the 95% Wilson score interval of the proportion of k in n.
func wilson(k, n int) (low, high float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(0, centre-half), min(1, centre+half)
}

func printEstimate(w io.Writer, e Estimate) {
	fmt.Fprintf(w, "Sample of %d of %d mutants (seed %d):\n  Test efficacy: %.2f%%, 95%% interval %.1f%% to %.1f%%\n",
		e.Sampled, e.Of, e.Seed, e.Efficacy, e.Low, e.High)
}
