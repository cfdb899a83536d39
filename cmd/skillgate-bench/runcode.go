package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// The run_code target: a trivial run over one framed connection, against a
// bare interpreter start measured in the same run.
const (
	targetRunCode   = 0.5
	bareInterpreter = "/usr/bin/python3"
	trivialRunCode  = `{"language":"python","code":"def main(args):\n    return {}\n"}`
)

// runCodeResult holds both latency distributions.
type runCodeResult struct {
	Gateway, Bare Histogram
	Err           error
}

// runRunCode alternates rounds of trivial run_code calls (one connection,
// one in flight) with rounds of bare `python3 -c pass` starts, so that both
// see the same machine.
func runRunCode(ctx context.Context, bins binaries, rounds, perRound int, log zerolog.Logger) *runCodeResult {
	res := &runCodeResult{}
	srv, err := startServer(ctx, kindGateway, bins, serverOpts{}, log)
	if err != nil {
		res.Err = err
		return res
	}
	defer srv.stop()
	log.Info().Int("rounds", rounds).Int("per_round", perRound).Msg("run_code against a bare interpreter")
	for range rounds {
		cfg := loadConfig{
			Target: target{Addr: srv.Addr}, Conns: 1, Depth: 1, Requests: perRound,
			Method: "run_code", Params: []byte(trivialRunCode),
		}
		lr, err := runLoad(ctx, cfg, log)
		if err == nil && lr.Errors > 0 {
			err = fmt.Errorf("run_code answered %d errors: %v", lr.Errors, lr.ErrorCodes)
		}
		if err != nil {
			res.Err = err
			return res
		}
		res.Gateway.Merge(&lr.Latency)
		if err := bareStarts(ctx, perRound, &res.Bare); err != nil {
			res.Err = err
			return res
		}
	}
	return res
}

func bareStarts(ctx context.Context, n int, h *Histogram) error {
	for range n {
		t0 := time.Now()
		if err := exec.CommandContext(ctx, bareInterpreter, "-c", "pass").Run(); err != nil {
			return fmt.Errorf("%s -c pass: %w", bareInterpreter, err)
		}
		h.Record(time.Since(t0))
	}
	return nil
}

func (r *runCodeResult) ratio() float64 {
	bare := r.Bare.Quantile(0.5)
	if bare <= 0 {
		return 0
	}
	return float64(r.Gateway.Quantile(0.5)) / float64(bare)
}

func (r *runCodeResult) markdown(b *strings.Builder) {
	b.WriteString("### run_code against a bare interpreter start\n\n")
	if r.Err != nil {
		fmt.Fprintf(b, "Not measured: %v\n\n", r.Err)
		return
	}
	fmt.Fprintf(b, "A trivial `run_code` (`def main(args): return {}`) over one framed connection, one call in flight, "+
		"in rounds alternating with bare `%s -c pass` starts.\n\n", bareInterpreter)
	b.WriteString("| | runs | p50 | p99 |\n|---|--:|--:|--:|\n")
	fmt.Fprintf(b, "| `run_code` through the gateway | %d | %s | %s |\n", r.Gateway.Count(), fmtDur(r.Gateway.Quantile(0.5)), fmtDur(r.Gateway.Quantile(0.99)))
	fmt.Fprintf(b, "| bare `%s -c pass` | %d | %s | %s |\n\n", bareInterpreter, r.Bare.Count(), fmtDur(r.Bare.Quantile(0.5)), fmtDur(r.Bare.Quantile(0.99)))
}

func (r *runCodeResult) target() [3]string {
	got := r.ratio()
	return [3]string{
		fmt.Sprintf("trivial `run_code` over one connection: p50 ≤ %.1f× a bare `%s -c` start", targetRunCode, bareInterpreter),
		fmtRatio(got), met(r.Err == nil && got > 0 && got <= targetRunCode),
	}
}
