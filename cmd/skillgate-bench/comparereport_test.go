package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A point with a size is labelled by its size, one without by its params.
func TestLoadPointLabel(t *testing.T) {
	assert.Equal(t, "_Keepalive c=10 100 B", loadPoint{Conns: 10, Size: 100, Method: "_Keepalive", Params: "{}"}.label())
	assert.Equal(t, `list_skills {"limit":1} c=10`, loadPoint{Conns: 10, Method: "list_skills", Params: `{"limit":1}`}.label())
}

// The plans' numbers as documented in the usage: the quick plan takes a
// couple of minutes, the full one runs longer.
func TestPlanNumbers(t *testing.T) {
	q := quickPlan()
	assert.Equal(t, 3, q.Rounds)
	assert.Equal(t, time.Second, q.Duration)
	assert.Equal(t, 300*time.Millisecond, q.Warmup)
	assert.Equal(t, 5*time.Second, q.IdleKeepalive)
	assert.Equal(t, sustainedPlan{Rounds: 3, Duration: 3 * time.Second, Cold: 10}, q.Sustained)

	f := fullPlan()
	assert.Equal(t, 3*time.Second, f.Duration)
	assert.Equal(t, time.Second, f.Warmup)
	assert.Equal(t, 5*time.Second, f.IdleKeepalive)
	assert.Equal(t, sustainedPlan{Rounds: 5, Duration: 10 * time.Second, Cold: 20}, f.Sustained)
	assert.Len(t, f.Idle, 6)
}

// Flags left at 0 keep the plan's numbers.
func TestPlanOverrideZeroKeepsThePlan(t *testing.T) {
	p := quickPlan()
	p.override(compareFlags{})
	assert.Equal(t, quickPlan(), p)
	p.override(compareFlags{skipLoad: true})
	assert.Empty(t, p.Points)
}

// A round the other server did not run is left out of the ratio, instead
// of dividing by 0.
func TestRatioSkipsRoundsWithoutTheOther(t *testing.T) {
	pr := fakePoint(loadPoint{Conns: 10, Size: 100, Method: "_Keepalive"}, map[string][]float64{
		kindGateway: {900, 1000},
		kindCeiling: {1000},
	})
	assert.InDelta(t, 0.9, pr.ratio(pr.vsKind(kindCeiling)), 1e-9)
}

// errorsOf reports the first failing run of a kind, skipping clean runs.
func TestErrorsOfSkipsCleanRuns(t *testing.T) {
	pr := fakePoint(loadPoint{Conns: 10}, map[string][]float64{kindJRPC2: {100, 100}})
	assert.Empty(t, pr.errorsOf(kindJRPC2))
	r := pr.Runs[kindJRPC2][1]
	r.Errors, r.ErrorCodes = 4, map[string]uint64{"X": 4}
	assert.Equal(t, "jrpc2: 4 X", pr.errorsOf(kindJRPC2))
}

// The throughput table: one row per point, "–" for a server that did not
// run it, the gateway-only note, then the errors, each block followed by
// one blank line.
func TestWritePoints(t *testing.T) {
	ka := fakePoint(loadPoint{Conns: 10, Size: 100, Method: "_Keepalive", Params: "{}"}, map[string][]float64{
		kindGateway: {800}, kindCeiling: {1000}, kindJRPC2: {400}, kindSourcegraph: {90},
	})
	ls := fakePoint(loadPoint{Conns: 10, Method: "list_skills", Params: `{"limit":1}`, GatewayOnly: true},
		map[string][]float64{kindGateway: {600}})
	rep := &compareReport{Points: []*pointResult{ka, ls}}
	p99 := fmtDur(ka.medianP99(kindGateway))
	header := "### Throughput and p99 latency\n\n" +
		"| load | gateway | ceiling | jrpc2 | sourcegraph | gateway / ceiling | gateway / best peer | p99 gateway | p99 ceiling | p99 jrpc2 | p99 sourcegraph |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" +
		"| _Keepalive c=10 100 B | 800 | 1.0 k | 400 | 90 | 0.80× | 2.00× | " + p99 + " | " + p99 + " | " + p99 + " | " + p99 + " |\n" +
		"| list_skills {\"limit\":1} c=10 | 600 | – | – | – | 0.60× | – | " + p99 + " | – | – | – |\n\n" +
		"`list_skills` runs on the gateway only; its ratio is against the ceiling's `_Keepalive` at the same connections.\n\n"
	var b strings.Builder
	rep.writePoints(&b)
	assert.Equal(t, header, b.String())

	r := ka.Runs[kindJRPC2][0]
	r.Errors, r.ErrorCodes = 3, map[string]uint64{"X": 3}
	b.Reset()
	rep.writePoints(&b)
	assert.Equal(t, header+"- errors: _Keepalive c=10 100 B: jrpc2: 3 X\n\n", b.String())
}

// The throughput and idle sections appear only when they were measured.
func TestMarkdownSections(t *testing.T) {
	md := (&compareReport{Plan: quickPlan()}).markdown("x")
	assert.NotContains(t, md, "### Throughput")
	assert.NotContains(t, md, "### Idle connections")

	ka := fakePoint(loadPoint{Conns: 10, Size: 100, Method: "_Keepalive", Params: "{}"}, map[string][]float64{kindGateway: {800}})
	idle := []idleRow{{Server: kindGateway, Res: &idleResult{Conns: 1}}}
	md = (&compareReport{Plan: quickPlan(), Points: []*pointResult{ka}, Idle: idle}).markdown("x")
	require.Contains(t, md, "### Throughput")
	assert.Contains(t, md, "### Idle connections")
}
