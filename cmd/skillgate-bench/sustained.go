package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Targets of sustained trivial run_code (issue 12), as ratios to a bare
// interpreter spawn loop measured in the same run at the same concurrency.
const (
	targetSustainedRate = 1.0 // throughput ≥ this × the bare spawn rate
	targetSustainedP99  = 1.0 // p99 at concurrency 1 ≤ this × the bare p50
	targetColdStart     = 1.5 // cold p50 ≤ this × the bare p50
)

// sustainedConcurrency are the points measured.
var sustainedConcurrency = []int{1, 4}

// sustainedPlan sizes the sustained measurement.
type sustainedPlan struct {
	Rounds   int
	Duration time.Duration // each window, gateway and bare alike
	Cold     int           // cold runs (and as many bare starts) per round
	Extra    []string      // more serve flags of the gateway
}

// sustainedPoint accumulates one concurrency over the rounds.
type sustainedPoint struct {
	Conc                 int
	Runs, BareRuns       uint64
	Elapsed, BareElapsed time.Duration
	Latency, Bare        Histogram
}

func (p *sustainedPoint) rate() float64     { return perSecond(p.Runs, p.Elapsed) }
func (p *sustainedPoint) bareRate() float64 { return perSecond(p.BareRuns, p.BareElapsed) }

func perSecond(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// sustainedResult is the sustained points and the cold start.
type sustainedResult struct {
	Plan       sustainedPlan
	Points     []*sustainedPoint
	Cold, Bare Histogram // cold start (empty pool) and bare starts beside it
	Err        error
}

// runSustained measures, round after round: for each concurrency a window
// of back-to-back trivial run_code calls and a window of bare
// `python3 -c pass` spawns; then cold runs on a gateway without a warm pool
// alternating with bare spawns.
func runSustained(ctx context.Context, bins binaries, plan sustainedPlan, log zerolog.Logger) *sustainedResult {
	res := &sustainedResult{Plan: plan}
	for _, c := range sustainedConcurrency {
		res.Points = append(res.Points, &sustainedPoint{Conc: c})
	}
	res.Err = res.measureWarm(ctx, bins, log)
	if res.Err == nil && plan.Cold > 0 {
		res.Err = res.measureCold(ctx, bins, log)
	}
	return res
}

func (res *sustainedResult) measureWarm(ctx context.Context, bins binaries, log zerolog.Logger) error {
	srv, err := startServer(ctx, kindGateway, bins, serverOpts{Extra: res.Plan.Extra}, log)
	if err != nil {
		return err
	}
	defer srv.stop()
	log.Info().Int("rounds", res.Plan.Rounds).Dur("window", res.Plan.Duration).Msg("sustained run_code against bare spawns")
	for round := 0; round < res.Plan.Rounds; round++ {
		for _, p := range res.Points {
			lr, err := runCodeWindow(ctx, srv.Addr, []byte(trivialRunCode), p.Conc, res.Plan.Duration, log)
			if err != nil {
				return err
			}
			p.Runs += lr.Responses
			p.Elapsed += lr.Elapsed
			p.Latency.Merge(&lr.Latency)
			n, d, err := bareSpawnLoop(ctx, "pass", p.Conc, res.Plan.Duration, &p.Bare)
			if err != nil {
				return err
			}
			p.BareRuns += n
			p.BareElapsed += d
		}
	}
	return nil
}

// runCodeWindow calls run_code with params back to back from conc
// connections for d (after a warm-up of a quarter of it); any error answer
// fails it.
func runCodeWindow(ctx context.Context, addr string, params []byte, conc int, d time.Duration, log zerolog.Logger) (*loadResult, error) {
	cfg := loadConfig{
		Target: target{Addr: addr, Timeout: 60 * time.Second}, Conns: conc, Depth: 1,
		Duration: d, Warmup: d / 4, Method: "run_code", Params: params,
	}
	lr, err := runLoad(ctx, cfg, log)
	if err == nil && lr.Errors > 0 {
		err = fmt.Errorf("run_code answered %d errors: %v", lr.Errors, lr.ErrorCodes)
	}
	return lr, err
}

// measureCold runs trivial calls on a gateway whose pool is off, paced so
// that the previous sandbox's teardown is over, beside bare starts.
func (res *sustainedResult) measureCold(ctx context.Context, bins binaries, log zerolog.Logger) error {
	extra := append(append([]string(nil), res.Plan.Extra...), "--sandbox-warm-pool", "0")
	srv, err := startServer(ctx, kindGateway, bins, serverOpts{Extra: extra}, log)
	if err != nil {
		return err
	}
	defer srv.stop()
	conn, err := dialInitialized(ctx, srv.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	for round := 0; round < res.Plan.Rounds; round++ {
		if err := pacedRuns(ctx, conn, []byte(trivialRunCode), res.Plan.Cold, &res.Cold); err != nil {
			return err
		}
		if err := bareStarts(ctx, "pass", res.Plan.Cold, &res.Bare); err != nil {
			return err
		}
	}
	return nil
}

// bareSpawnLoop spawns `python3 -c code` from conc goroutines, one after
// the other in each, for d; it returns how many completed and how long.
func bareSpawnLoop(ctx context.Context, code string, conc int, d time.Duration, h *Histogram) (uint64, time.Duration, error) {
	var (
		mu    sync.Mutex
		n     uint64
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local Histogram
			var count uint64
			var err error
			for err == nil && ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				if err = exec.CommandContext(ctx, bareInterpreter, "-c", code).Run(); err == nil {
					local.Record(time.Since(t0))
					count++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			h.Merge(&local)
			n += count
			if first == nil && err != nil {
				first = fmt.Errorf("%s -c %q: %w", bareInterpreter, code, err)
			}
		}()
	}
	wg.Wait()
	return n, time.Since(start), first
}

func (res *sustainedResult) markdown(b *strings.Builder) {
	b.WriteString("### Sustained run_code against a bare interpreter spawn loop\n\n")
	if res.Err != nil {
		fmt.Fprintf(b, "Not measured: %v\n\n", res.Err)
		return
	}
	fmt.Fprintf(b, "Trivial `run_code` calls back to back (N connections, one call in flight each) for %s, then `%s -c pass` "+
		"spawned back to back from N goroutines for %s; %d rounds. Cold: a gateway with `--sandbox-warm-pool 0`, paced calls "+
		"alternating with bare starts.", res.Plan.Duration, bareInterpreter, res.Plan.Duration, res.Plan.Rounds)
	if len(res.Plan.Extra) > 0 {
		fmt.Fprintf(b, " Gateway flags: `%s`.", strings.Join(res.Plan.Extra, " "))
	}
	b.WriteString("\n\n| N | run_code/s | p50 | p99 | bare spawns/s | bare p50 | bare p99 | throughput ratio |\n|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, p := range res.Points {
		fmt.Fprintf(b, "| %d | %.1f | %s | %s | %.1f | %s | %s | %s |\n", p.Conc, p.rate(),
			fmtDur(p.Latency.Quantile(0.5)), fmtDur(p.Latency.Quantile(0.99)), p.bareRate(),
			fmtDur(p.Bare.Quantile(0.5)), fmtDur(p.Bare.Quantile(0.99)), fmtRatio(ratioOf(p.rate(), p.bareRate())))
	}
	if res.Cold.Count() > 0 {
		fmt.Fprintf(b, "\n| cold | runs | p50 | p99 |\n|---|--:|--:|--:|\n")
		fmt.Fprintf(b, "| `run_code`, empty pool | %d | %s | %s |\n", res.Cold.Count(), fmtDur(res.Cold.Quantile(0.5)), fmtDur(res.Cold.Quantile(0.99)))
		fmt.Fprintf(b, "| bare `%s -c pass` | %d | %s | %s |\n", bareInterpreter, res.Bare.Count(), fmtDur(res.Bare.Quantile(0.5)), fmtDur(res.Bare.Quantile(0.99)))
	}
	b.WriteString("\n")
}

func ratioOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// targets checks the sustained targets of issue 12.
func (res *sustainedResult) targets() [][3]string {
	var rows [][3]string
	ok := res.Err == nil
	for _, p := range res.Points {
		r := ratioOf(p.rate(), p.bareRate())
		rows = append(rows, [3]string{
			fmt.Sprintf("sustained trivial `run_code`, %d in flight: ≥ %.1f× the bare spawn rate", p.Conc, targetSustainedRate),
			fmtRatio(r), met(ok && r >= targetSustainedRate),
		})
		if p.Conc == 1 {
			r := ratioOf(float64(p.Latency.Quantile(0.99)), float64(p.Bare.Quantile(0.5)))
			rows = append(rows, [3]string{
				fmt.Sprintf("sustained, 1 in flight: p99 ≤ %.1f× the bare spawn p50", targetSustainedP99),
				fmtRatio(r), met(ok && r > 0 && r <= targetSustainedP99),
			})
		}
	}
	if res.Cold.Count() > 0 {
		r := ratioOf(float64(res.Cold.Quantile(0.5)), float64(res.Bare.Quantile(0.5)))
		rows = append(rows, [3]string{
			fmt.Sprintf("cold start (empty pool): p50 ≤ %.1f× a bare spawn", targetColdStart),
			fmtRatio(r), met(ok && r > 0 && r <= targetColdStart),
		})
	}
	return rows
}
