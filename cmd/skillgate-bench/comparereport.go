package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// compareReport is everything compare measured.
type compareReport struct {
	Plan              comparePlan
	Started, Finished time.Time
	Machine           string
	Points            []*pointResult
	Idle              []idleRow
	RunCode           *runCodeResult
	Sustained         *sustainedResult
	Profiles          []*profileResult
}

// Targets of the issue.
const (
	targetVsCeiling   = 0.8
	targetVsPeer      = 2.0
	targetListSkills  = 0.6
	targetIdleTCP     = 8 << 10
	targetIdleTLS     = 24 << 10
	targetIdlePoint   = 10000
	peerJRPC2, peerSG = kindJRPC2, kindSourcegraph
)

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rates returns the per-round rates of kind.
func (pr *pointResult) rates(kind string) []float64 {
	var out []float64
	for _, r := range pr.Runs[kind] {
		out = append(out, r.Rate())
	}
	return out
}

func (pr *pointResult) medianRate(kind string) float64 { return median(pr.rates(kind)) }

func (pr *pointResult) medianP99(kind string) time.Duration {
	var v []float64
	for _, r := range pr.Runs[kind] {
		v = append(v, float64(r.Latency.Quantile(0.99)))
	}
	return time.Duration(median(v))
}

// ratio is the median over rounds of the gateway's rate divided by what
// other returns for the same round, so each ratio compares adjacent runs.
func (pr *pointResult) ratio(other func(round int) float64) float64 {
	gw := pr.rates(kindGateway)
	var v []float64
	for i, g := range gw {
		if o := other(i); o > 0 {
			v = append(v, g/o)
		}
	}
	return median(v)
}

func (pr *pointResult) vsKind(kind string) func(int) float64 {
	return func(i int) float64 { return at(pr.rates(kind), i) }
}

func (pr *pointResult) bestPeer(i int) float64 {
	return max(at(pr.rates(peerJRPC2), i), at(pr.rates(peerSG), i))
}

func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// errorsOf summarizes the error answers and failures of kind's runs.
func (pr *pointResult) errorsOf(kind string) string {
	var parts []string
	for _, r := range pr.Runs[kind] {
		if e := fmtErrors(r); e != "0" {
			parts = append(parts, e)
		}
	}
	if err := pr.Errs[kind]; err != nil {
		parts = append(parts, err.Error())
	}
	if len(parts) == 0 {
		return ""
	}
	return kind + ": " + parts[0]
}

func (rep *compareReport) markdown(cmdline string) string {
	var b strings.Builder
	p := rep.Plan
	fmt.Fprintf(&b, "## skillgate-bench compare (%s)\n\n", p.Mode)
	fmt.Fprintf(&b, "- date: %s (took %s)\n", rep.Started.UTC().Format("2006-01-02 15:04 MST"), rep.Finished.Sub(rep.Started).Round(time.Second))
	fmt.Fprintf(&b, "- machine: %s; load tool and servers share it\n", rep.Machine)
	fmt.Fprintf(&b, "- command: `%s`\n", cmdline)
	fmt.Fprintf(&b, "- load: %d requests in flight per connection, %s measured after %s of warm-up, %d rounds alternating gateway, ceiling, jrpc2, sourcegraph; rates and p99 are medians over the rounds, ratios are medians of per-round ratios\n\n",
		p.Depth, p.Duration, p.Warmup, p.Rounds)
	rep.writePoints(&b)
	rep.writeTargets(&b)
	if len(rep.Idle) > 0 {
		fmt.Fprintf(&b, "### Idle connections: server RSS per connection\n\n")
		fmt.Fprintf(&b, "Fresh gateway per row, `--keepalive-interval %s`; connections initialized, then held for at least %s "+
			"(past the gateway's first return of free heap to the system) and until %d keepalive probes per connection were answered.\n\n",
			p.IdleKeepalive, idleSteadyHold, p.IdleRounds)
		writeIdleTable(&b, rep.Idle)
		b.WriteString("\n")
	}
	if rep.RunCode != nil {
		rep.RunCode.markdown(&b)
	}
	if rep.Sustained != nil {
		rep.Sustained.markdown(&b)
	}
	for _, pr := range rep.Profiles {
		pr.markdown(&b)
	}
	for _, r := range rep.Idle {
		if r.Heap != nil {
			r.Heap.markdown(&b)
		}
	}
	return b.String()
}

func (rep *compareReport) writePoints(b *strings.Builder) {
	if len(rep.Points) == 0 {
		return
	}
	fmt.Fprintf(b, "### Throughput and p99 latency\n\n")
	fmt.Fprintln(b, "| load | gateway | ceiling | jrpc2 | sourcegraph | gateway / ceiling | gateway / best peer | p99 gateway | p99 ceiling | p99 jrpc2 | p99 sourcegraph |")
	fmt.Fprintln(b, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	var errs []string
	for _, pr := range rep.Points {
		rate := func(k string) string { return cell(pr, k, fmtRate(pr.medianRate(k))) }
		p99 := func(k string) string { return cell(pr, k, fmtDur(pr.medianP99(k))) }
		vsCeil, vsPeer := pr.ratio(pr.vsKind(kindCeiling)), pr.ratio(pr.bestPeer)
		if pr.Point.GatewayOnly {
			vsCeil, vsPeer = rep.listSkillsRatio(pr), 0
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", pr.Point.label(),
			rate(kindGateway), rate(kindCeiling), rate(peerJRPC2), rate(peerSG), fmtRatio(vsCeil), fmtRatio(vsPeer),
			p99(kindGateway), p99(kindCeiling), p99(peerJRPC2), p99(peerSG))
		for _, k := range serverKinds {
			if e := pr.errorsOf(k); e != "" {
				errs = append(errs, pr.Point.label()+": "+e)
			}
		}
	}
	b.WriteString("\n")
	if pr := rep.find(func(p loadPoint) bool { return p.GatewayOnly }); pr != nil {
		fmt.Fprintf(b, "`%s` runs on the gateway only; its ratio is against the ceiling's `_Keepalive` at the same connections.\n\n", pr.Point.Method)
	}
	for _, e := range errs {
		fmt.Fprintf(b, "- errors: %s\n", e)
	}
	if len(errs) > 0 {
		b.WriteString("\n")
	}
}

// cell is the value of a server's column, or "–" when it did not run.
func cell(pr *pointResult, kind, v string) string {
	if len(pr.Runs[kind]) == 0 {
		return "–"
	}
	return v
}

func (rep *compareReport) find(match func(loadPoint) bool) *pointResult {
	for _, pr := range rep.Points {
		if match(pr.Point) {
			return pr
		}
	}
	return nil
}

// keepaliveAt returns the 100 B _Keepalive point with conns connections.
func (rep *compareReport) keepaliveAt(conns int) *pointResult {
	return rep.find(func(p loadPoint) bool {
		return !p.GatewayOnly && p.Method == "_Keepalive" && p.Conns == conns && p.Size == 100
	})
}

// listSkillsRatio compares a gateway-only point with the ceiling's
// _Keepalive at the same connections, round by round.
func (rep *compareReport) listSkillsRatio(pr *pointResult) float64 {
	ka := rep.keepaliveAt(pr.Point.Conns)
	if ka == nil || servedNone(pr) {
		return 0
	}
	return pr.ratio(ka.vsKind(kindCeiling))
}

// servedNone reports whether every answer of the gateway was an error
// (the method is not served).
func servedNone(pr *pointResult) bool {
	for _, r := range pr.Runs[kindGateway] {
		if r.Responses > r.Errors {
			return false
		}
	}
	return true
}
