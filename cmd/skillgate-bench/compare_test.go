package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMedian(t *testing.T) {
	assert.Zero(t, median(nil))
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
}

func fakeRun(rate float64, p99 time.Duration) *loadResult {
	r := &loadResult{Responses: uint64(rate), Elapsed: time.Second}
	r.Latency.Record(p99)
	return r
}

func fakePoint(pt loadPoint, rates map[string][]float64) *pointResult {
	pr := &pointResult{Point: pt, Runs: map[string][]*loadResult{}, Errs: map[string]error{}}
	for k, rs := range rates {
		for _, r := range rs {
			pr.Runs[k] = append(pr.Runs[k], fakeRun(r, time.Millisecond))
		}
	}
	return pr
}

func TestRatiosUseAdjacentRounds(t *testing.T) {
	pt := loadPoint{Conns: 10, Size: 100, Method: "_Keepalive", Params: "{}"}
	pr := fakePoint(pt, map[string][]float64{
		kindGateway:     {900, 450, 1000},
		kindCeiling:     {1000, 500, 1000},
		kindJRPC2:       {100, 50, 300},
		kindSourcegraph: {200, 100, 100},
	})
	assert.InDelta(t, 0.9, pr.ratio(pr.vsKind(kindCeiling)), 1e-9)
	assert.InDelta(t, 4.5, pr.ratio(pr.bestPeer), 1e-9)
}

func TestReportTargets(t *testing.T) {
	ka := fakePoint(loadPoint{Conns: 10, Size: 100, Method: "_Keepalive", Params: "{}"}, map[string][]float64{
		kindGateway: {700}, kindCeiling: {1000}, kindJRPC2: {100}, kindSourcegraph: {90},
	})
	ls := fakePoint(loadPoint{Conns: 10, Method: "list_skills", Params: `{"limit":1}`, GatewayOnly: true},
		map[string][]float64{kindGateway: {650}})
	idle := &idleResult{Conns: targetIdlePoint, After: memSample{RSS: targetIdlePoint * 7 << 10}}
	rep := &compareReport{
		Plan:   quickPlan(),
		Points: []*pointResult{ka, ls},
		Idle:   []idleRow{{Server: kindGateway, Res: idle}, {Server: kindGateway, TLS: true, Res: idle}},
	}
	md := rep.markdown("skillgate-bench compare")
	assert.Contains(t, md, "| pipelined `_Keepalive`, 10 conns: ≥ 0.8× ceiling, ≥ 2× best peer | 0.70× ceiling, 7.00× best peer | **no** |")
	assert.Contains(t, md, "0.65× | yes |")
	assert.Contains(t, md, "plain TCP connections: ≤ 8.0 KiB RSS each | 7.0 KiB | yes |")
	assert.Contains(t, md, "TLS connections: ≤ 24.0 KiB RSS each | 7.0 KiB | yes |")
	assert.Equal(t, 1, strings.Count(md, "### Targets"))
}

func TestReportListSkillsNotServed(t *testing.T) {
	ls := fakePoint(loadPoint{Conns: 10, Method: "list_skills", Params: `{"limit":1}`, GatewayOnly: true},
		map[string][]float64{kindGateway: {650}})
	ls.Runs[kindGateway][0].Errors = 650
	ls.Runs[kindGateway][0].ErrorCodes = map[string]uint64{"JSONRPC_METHOD_NOT_FOUND": 650}
	rep := &compareReport{Plan: quickPlan(), Points: []*pointResult{ls}}
	assert.Contains(t, rep.markdown("x"), "not served by this gateway build")
}

func TestPlans(t *testing.T) {
	for _, p := range []comparePlan{quickPlan(), fullPlan()} {
		assert.Positive(t, p.Rounds)
		assert.NotEmpty(t, p.Points)
		assert.NotEmpty(t, p.Idle)
	}
	p := quickPlan()
	p.override(compareFlags{rounds: 5, duration: time.Minute, depth: 7, skipIdle: true})
	assert.Equal(t, 5, p.Rounds)
	assert.Equal(t, time.Minute, p.Duration)
	assert.Equal(t, 7, p.Depth)
	assert.Empty(t, p.Idle)
}

func TestGatewayArgs(t *testing.T) {
	args := strings.Join(gatewayArgs("127.0.0.1:1", "127.0.0.1:2", serverOpts{TLS: true, CertFile: "c", KeyFile: "k"}), " ")
	assert.Contains(t, args, "--tls-listen 127.0.0.1:1 --tls-cert c --tls-key k")
	assert.Contains(t, args, "--keepalive-interval 1h0m0s")
	assert.Contains(t, args, "--log-level warn")
	plain := strings.Join(gatewayArgs("127.0.0.1:1", "127.0.0.1:2", serverOpts{KeepaliveInterval: time.Second}), " ")
	assert.Contains(t, plain, "--listen 127.0.0.1:1")
	assert.Contains(t, plain, "--keepalive-interval 1s --keepalive-timeout 5s")
}

func TestListenFlagRegexp(t *testing.T) {
	help := `      --http-listen string   front door (default "127.0.0.1:8080")
      --listen string        framed
      --metrics-listen string  metrics
      --tls-listen string    tls`
	var found []string
	for _, m := range listenFlag.FindAllStringSubmatch(help, -1) {
		found = append(found, m[1])
	}
	assert.Equal(t, []string{"http-listen", "listen", "metrics-listen", "tls-listen"}, found)
}

func TestFormatters(t *testing.T) {
	assert.Equal(t, "312.7 k", fmtRate(312_700))
	assert.Equal(t, "2.27 M", fmtRate(2_270_000))
	assert.Equal(t, "950", fmtRate(950))
	assert.Equal(t, "–", fmtDur(0))
	assert.Equal(t, "840 ns", fmtDur(840))
	assert.Equal(t, "73.0 µs", fmtDur(73*time.Microsecond))
	assert.Equal(t, "1.21 s", fmtDur(1210*time.Millisecond))
	assert.Equal(t, "8.0 KiB", fmtKiB(8192))
	assert.Equal(t, "–", fmtRatio(0))
}

// Each target is met exactly at its bound; only the idle measurement at
// exactly the target's connection count is judged.
func TestReportTargetsAtTheirBounds(t *testing.T) {
	ka := fakePoint(loadPoint{Conns: 10, Size: 100, Method: "_Keepalive", Params: "{}"}, map[string][]float64{
		kindGateway: {800}, kindCeiling: {1000}, kindJRPC2: {400}, kindSourcegraph: {90},
	})
	ls := fakePoint(loadPoint{Conns: 10, Method: "list_skills", Params: `{"limit":1}`, GatewayOnly: true},
		map[string][]float64{kindGateway: {600}})
	atLimit := &idleResult{Conns: targetIdlePoint, After: memSample{RSS: targetIdlePoint * 8 << 10}}
	fewer := &idleResult{Conns: targetIdlePoint - 1, After: memSample{RSS: 1 << 40}}
	more := &idleResult{Conns: targetIdlePoint + 1, After: memSample{RSS: 1 << 40}}
	rep := &compareReport{
		Plan:   quickPlan(),
		Points: []*pointResult{ka, ls},
		Idle:   []idleRow{{Server: kindGateway, Res: fewer}, {Server: kindGateway, Res: atLimit}, {Server: kindGateway, Res: more}},
	}
	md := rep.markdown("skillgate-bench compare")
	assert.Contains(t, md, "| 0.80× ceiling, 2.00× best peer | yes |")
	assert.Contains(t, md, "0.60× | yes |")
	assert.Contains(t, md, "plain TCP connections: ≤ 8.0 KiB RSS each | 8.0 KiB | yes |")
	assert.Equal(t, 1, strings.Count(md, "RSS each |"), "only the row of exactly %d connections", targetIdlePoint)
}
