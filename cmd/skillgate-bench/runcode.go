package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/session"
)

// The run_code target: a trivial run over one framed connection, against a
// bare interpreter start measured in the same run.
const (
	targetRunCode   = 0.5
	bareInterpreter = "/usr/bin/python3"
	trivialRunCode  = `{"language":"python","code":"def main(args):\n    return {}\n"}`
)

// runCodePause separates the paced runs: long enough for the warm pool to
// refill, as it does between the calls of an agent that thinks in between.
const runCodePause = 50 * time.Millisecond

// runCodeResult holds the latency distributions: paced runs (the pool warm,
// the target), back-to-back runs (sustained throughput) and bare starts.
type runCodeResult struct {
	Gateway, BackToBack, Bare Histogram
	Err                       error
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
	conn, err := dialInitialized(ctx, srv.Addr)
	if err == nil {
		defer conn.Close()
	}
	for round := 0; err == nil && round < rounds; round++ {
		if err = pacedRuns(ctx, conn, []byte(trivialRunCode), perRound, &res.Gateway); err != nil {
			break
		}
		if err = backToBackRuns(ctx, srv.Addr, perRound, &res.BackToBack, log); err != nil {
			break
		}
		err = bareStarts(ctx, "pass", perRound, &res.Bare)
	}
	res.Err = err
	return res
}

// dialInitialized opens a framed connection to addr and initializes it.
func dialInitialized(ctx context.Context, addr string) (*session.Conn, error) {
	conn, err := session.Dial(ctx, addr, nil, session.ClientConfig(), nil)
	if err != nil {
		return nil, err
	}
	if _, err = conn.Call(ctx, "Initialize", json.RawMessage(`{"protocol_version":"1.0"}`)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// pacedRuns calls run_code with params n times, pausing between calls.
func pacedRuns(ctx context.Context, conn *session.Conn, params json.RawMessage, n int, h *Histogram) error {
	for range n {
		if !sleepCtx(ctx, runCodePause) {
			return ctx.Err()
		}
		t0 := time.Now()
		out, err := conn.Call(ctx, "run_code", params)
		if err != nil {
			return fmt.Errorf("run_code: %w", err)
		}
		h.Record(time.Since(t0))
		if !strings.Contains(string(out), `"completed"`) {
			return fmt.Errorf("run_code did not complete: %s", out)
		}
	}
	return nil
}

// backToBackRuns calls run_code n times with one call in flight.
func backToBackRuns(ctx context.Context, addr string, n int, h *Histogram, log zerolog.Logger) error {
	cfg := loadConfig{
		Target: target{Addr: addr}, Conns: 1, Depth: 1, Requests: n,
		Method: "run_code", Params: []byte(trivialRunCode),
	}
	lr, err := runLoad(ctx, cfg, log)
	if err == nil && lr.Errors > 0 {
		err = fmt.Errorf("run_code answered %d errors: %v", lr.Errors, lr.ErrorCodes)
	}
	if err == nil {
		h.Merge(&lr.Latency)
	}
	return err
}

// bareStarts runs `python3 -c code` n times, one after the other.
func bareStarts(ctx context.Context, code string, n int, h *Histogram) error {
	for range n {
		t0 := time.Now()
		if err := exec.CommandContext(ctx, bareInterpreter, "-c", code).Run(); err != nil {
			return fmt.Errorf("%s -c %q: %w", bareInterpreter, code, err)
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
	fmt.Fprintf(b, "A trivial `run_code` (`def main(args): return {}`) over one framed connection, in rounds alternating with "+
		"bare `%s -c pass` starts. Paced runs leave %s between calls, as an agent that thinks between calls does, so the warm pool "+
		"has refilled (the target); back-to-back runs keep one call in flight and show how fast sandboxes are made.\n\n",
		bareInterpreter, runCodePause)
	b.WriteString("| | runs | p50 | p99 |\n|---|--:|--:|--:|\n")
	fmt.Fprintf(b, "| `run_code` through the gateway, paced | %d | %s | %s |\n", r.Gateway.Count(), fmtDur(r.Gateway.Quantile(0.5)), fmtDur(r.Gateway.Quantile(0.99)))
	fmt.Fprintf(b, "| `run_code` through the gateway, back-to-back | %d | %s | %s |\n", r.BackToBack.Count(), fmtDur(r.BackToBack.Quantile(0.5)), fmtDur(r.BackToBack.Quantile(0.99)))
	fmt.Fprintf(b, "| bare `%s -c pass` | %d | %s | %s |\n\n", bareInterpreter, r.Bare.Count(), fmtDur(r.Bare.Quantile(0.5)), fmtDur(r.Bare.Quantile(0.99)))
}

func (r *runCodeResult) target() [3]string {
	got := r.ratio()
	return [3]string{
		fmt.Sprintf("trivial `run_code` over one connection (pool warm): p50 ≤ %.1f× a bare `%s -c` start", targetRunCode, bareInterpreter),
		fmtRatio(got), met(r.Err == nil && got > 0 && got <= targetRunCode),
	}
}
