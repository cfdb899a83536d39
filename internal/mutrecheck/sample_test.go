package main

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manyMutants is a report of two files with n lived mutants each, on
// lines 1..n.
func manyMutants(n int) Report {
	var a, b []ReportMutation
	for i := 1; i <= n; i++ {
		a = append(a, ReportMutation{Type: "CONDITIONALS_NEGATION", Status: statusLived, Line: i, Column: 1})
		b = append(b, ReportMutation{Type: "ARITHMETIC_BASE", Status: statusNotCovered, Line: i, Column: 1})
	}
	return Report{Files: []ReportFile{{Filename: "a.go", Mutations: a}, {Filename: "b.go", Mutations: b}}}
}

func TestSelectWithoutSampleKeepsEveryMatch(t *testing.T) {
	cfg := Config{Report: manyMutants(5), Statuses: []string{statusLived, statusNotCovered}}
	assert.Len(t, cfg.Select(), 10)
	cfg.Files = regexp.MustCompile(`^b\.go$`)
	got := cfg.Select()
	require.Len(t, got, 5)
	for i, m := range got {
		assert.Equal(t, "b.go", m.File)
		assert.Equal(t, i+1, m.Line, "the report's order")
	}
	cfg.Sample = 5 // as many as selected: all of them
	assert.Len(t, cfg.Select(), 5)
	cfg.Sample = 6
	assert.Len(t, cfg.Select(), 5)
	assert.Equal(t, 5, cfg.selectedWithoutSample())
}

func TestSelectSample(t *testing.T) {
	cfg := Config{Report: manyMutants(100), Statuses: []string{statusLived}, Sample: 10, Seed: 7}
	first := cfg.Select()
	require.Len(t, first, 10)
	assert.Equal(t, first, cfg.Select(), "the same seed draws the same mutants")
	assert.Equal(t, 100, cfg.selectedWithoutSample())
	seen := map[int]bool{}
	for i, m := range first {
		assert.Equal(t, "a.go", m.File, "only selected mutants are drawn")
		assert.False(t, seen[m.Line], "no mutant is drawn twice")
		seen[m.Line] = true
		if i > 0 {
			assert.Greater(t, m.Line, first[i-1].Line, "the sample keeps the report's order")
		}
	}

	cfg.Seed = 8
	assert.NotEqual(t, first, cfg.Select(), "another seed draws others")

	// Over many seeds every mutant is drawn about as often: the draw is
	// uniform, not the first few.
	counts := make([]int, 101)
	for seed := range uint64(500) {
		cfg.Seed = seed
		for _, m := range cfg.Select() {
			counts[m.Line]++
		}
	}
	for line := 1; line <= 100; line++ {
		assert.InDelta(t, 50, counts[line], 30, "line %d drawn %d times in 500 draws of 10 of 100", line, counts[line])
	}
}

func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n      int
		low, high float64
	}{
		{93, 100, 0.86250, 0.96568},
		{10, 10, 0.72247, 1},
		{0, 5, 0, 0.43448},
		{0, 0, 0, 1}, // nothing judged: nothing known
	} {
		low, high := wilson(c.k, c.n)
		assert.InDelta(t, c.low, low, 1e-5, "%d of %d", c.k, c.n)
		assert.InDelta(t, c.high, high, 1e-5, "%d of %d", c.k, c.n)
	}
}

func TestEstimate(t *testing.T) {
	var rs []Rechecked
	for i := range 100 {
		status := statusKilled
		switch {
		case i < 7:
			status = statusLived
		case i < 10: // outside the efficacy, as in every score
			status = []string{statusTimedOut, statusNotViable, statusStale}[i-7]
		}
		rs = append(rs, Rechecked{Status: status})
	}
	e := estimate(rs, 900, 3)
	assert.Equal(t, 100, e.Sampled)
	assert.Equal(t, 900, e.Of)
	assert.Equal(t, uint64(3), e.Seed)
	assert.InDelta(t, 90.0/97*100, e.Efficacy, 1e-9)
	low, high := wilson(90, 97)
	assert.InDelta(t, low*100, e.Low, 1e-9)
	assert.InDelta(t, high*100, e.High, 1e-9)
	assert.Less(t, e.Low, e.Efficacy)
	assert.Greater(t, e.High, e.Efficacy)

	var out bytes.Buffer
	printEstimate(&out, e)
	assert.Equal(t, fmt.Sprintf("Sample of 100 of 900 mutants (seed 3):\n  Test efficacy: 92.78%%, 95%% interval %.1f%% to %.1f%%\n", e.Low, e.High), out.String())
}
