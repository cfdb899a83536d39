package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// loadPoint is one load configuration of the comparison.
type loadPoint struct {
	Conns  int
	Size   int
	Method string
	Params string
	// GatewayOnly runs the point on the gateway alone (its ratios use the
	// ceiling's _Keepalive rate at the same connections and size).
	GatewayOnly bool
}

func (p loadPoint) label() string {
	if p.Size == 0 {
		return fmt.Sprintf("%s %s c=%d", p.Method, p.Params, p.Conns)
	}
	return fmt.Sprintf("%s c=%d %s", p.Method, p.Conns, formatSize(p.Size))
}

// idlePoint is one idle-memory configuration of the gateway.
type idlePoint struct {
	Conns int
	TLS   bool
}

// comparePlan is what compare runs.
type comparePlan struct {
	Mode             string
	Rounds           int
	Duration, Warmup time.Duration
	Depth            int
	Points           []loadPoint
	Idle             []idlePoint
	IdleRounds       int
	IdleKeepalive    time.Duration
	// RunCodeRounds × RunCodePerRound trivial runs, alternating with as
	// many bare interpreter starts; 0 skips the measurement.
	RunCodeRounds, RunCodePerRound int
	// Sustained sizes the sustained run_code points; 0 rounds skip them.
	Sustained sustainedPlan
}

func quickPlan() comparePlan {
	return comparePlan{
		Mode: "quick", Rounds: 3, Duration: time.Second, Warmup: 300 * time.Millisecond, Depth: 32,
		Points: curvePoints(),
		Idle:   []idlePoint{{10000, false}, {10000, true}}, IdleRounds: 2, IdleKeepalive: 5 * time.Second,
		RunCodeRounds: 5, RunCodePerRound: 20,
		Sustained: sustainedPlan{Rounds: 3, Duration: 3 * time.Second, Cold: 10},
	}
}

func fullPlan() comparePlan {
	var idle []idlePoint
	for _, tls := range []bool{false, true} {
		for _, n := range []int{1000, 10000, 20000} {
			idle = append(idle, idlePoint{n, tls})
		}
	}
	return comparePlan{
		Mode: "full", Rounds: 3, Duration: 3 * time.Second, Warmup: time.Second, Depth: 32,
		Points: curvePoints(), Idle: idle, IdleRounds: 3, IdleKeepalive: 5 * time.Second,
		RunCodeRounds: 10, RunCodePerRound: 50,
		Sustained: sustainedPlan{Rounds: 5, Duration: 10 * time.Second, Cold: 20},
	}
}

// curvePoints: throughput and p99 against connections (100 B) and against
// message size (10 connections), plus list_skills on the gateway.
func curvePoints() []loadPoint {
	var pts []loadPoint
	for _, c := range []int{1, 10, 100, 1000} {
		pts = append(pts, loadPoint{Conns: c, Size: 100, Method: "_Keepalive", Params: "{}"})
	}
	for _, s := range []int{4 << 10, 64 << 10} {
		pts = append(pts, loadPoint{Conns: 10, Size: s, Method: "_Keepalive", Params: "{}"})
	}
	return append(pts, loadPoint{Conns: 10, Method: "list_skills", Params: `{"limit":1}`, GatewayOnly: true})
}

type compareFlags struct {
	full       bool
	rounds     int
	duration   time.Duration
	depth      int
	root, bin  string
	out        string
	profileDir string
	skipIdle   bool
	skipLoad   bool
}

func cmdCompare(ctx context.Context, args []string, stdout io.Writer, log zerolog.Logger) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var f compareFlags
	fs.Bool("quick", true, "the quick plan (the default): a couple of minutes")
	fs.BoolVar(&f.full, "full", false, "the full plan: more rounds, longer runs, idle curves to 20k")
	fs.IntVar(&f.rounds, "rounds", 0, "alternated rounds (0: the plan's)")
	fs.DurationVar(&f.duration, "duration", 0, "measured window of each run (0: the plan's)")
	fs.IntVar(&f.depth, "depth", 0, "requests in flight per connection (0: the plan's)")
	fs.StringVar(&f.root, "root", ".", "repository root (holds go.mod and bench/)")
	fs.StringVar(&f.bin, "bin-dir", "bin/bench", "where to build the binaries")
	fs.StringVar(&f.out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&f.profileDir, "profile", "", "take CPU and alloc profiles of the gateway (under the c=10 _Keepalive and the list_skills loads) and heap profiles (10k idle connections) into this directory")
	fs.BoolVar(&f.skipIdle, "no-idle", false, "skip the idle-memory curves")
	fs.BoolVar(&f.skipLoad, "no-load", false, "skip the throughput curves")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	plan := quickPlan()
	if f.full {
		plan = fullPlan()
	}
	plan.override(f)
	rep, err := runCompare(ctx, plan, &f, log)
	if rep == nil {
		return err
	}
	text := rep.markdown(strings.Join(append([]string{"skillgate-bench", "compare"}, args...), " "))
	fmt.Fprint(stdout, text)
	if f.out != "" {
		if werr := os.WriteFile(f.out, []byte(text), 0o644); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

func (p *comparePlan) override(f compareFlags) {
	if f.rounds > 0 {
		p.Rounds = f.rounds
	}
	if f.duration > 0 {
		p.Duration = f.duration
	}
	if f.depth > 0 {
		p.Depth = f.depth
	}
	if f.skipIdle {
		p.Idle = nil
	}
	if f.skipLoad {
		p.Points = nil
	}
}

// runCompare builds the servers and runs the plan.
func runCompare(ctx context.Context, plan comparePlan, f *compareFlags, log zerolog.Logger) (*compareReport, error) {
	bins, err := buildBinaries(ctx, f.root, f.bin, log)
	if err != nil {
		return nil, err
	}
	rep := &compareReport{Plan: plan, Started: time.Now(), Machine: machine()}
	if len(plan.Points) > 0 {
		if err := runLoadCurves(ctx, plan, bins, f, rep, log); err != nil {
			return rep, err
		}
	}
	for _, ip := range plan.Idle {
		row, err := runIdlePoint(ctx, plan, bins, ip, f.profileDir, log)
		if err != nil && ctx.Err() != nil {
			return rep, err
		}
		rep.Idle = append(rep.Idle, row)
	}
	if plan.RunCodeRounds > 0 {
		rep.RunCode = runRunCode(ctx, bins, plan.RunCodeRounds, plan.RunCodePerRound, log)
	}
	if plan.Sustained.Rounds > 0 {
		rep.Sustained = runSustained(ctx, bins, plan.Sustained, log)
	}
	rep.Finished = time.Now()
	return rep, nil
}

// runLoadCurves starts every server once and runs each point on them in
// alternation, round after round, so that drift of the shared machine hits
// all servers alike.
func runLoadCurves(ctx context.Context, plan comparePlan, bins binaries, f *compareFlags, rep *compareReport, log zerolog.Logger) error {
	servers := make(map[string]*server)
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, kind := range serverKinds {
		s, err := startServer(ctx, kind, bins, serverOpts{Pprof: true, MaxInflight: 4096}, log)
		if err != nil {
			return err
		}
		servers[kind] = s
	}
	for _, pt := range plan.Points {
		res := runPoint(ctx, plan, pt, servers, log)
		rep.Points = append(rep.Points, res)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if f.profileDir != "" && (pt.GatewayOnly || pt.Conns == 10 && pt.Size == 100 && pt.Method == "_Keepalive") {
			rep.Profiles = append(rep.Profiles, takeProfiles(ctx, plan, pt, servers[kindGateway], bins.Gateway, f.profileDir, log))
		}
	}
	return nil
}

// pointResult holds the runs of one point: runs[server][round].
type pointResult struct {
	Point loadPoint
	Runs  map[string][]*loadResult
	Errs  map[string]error
}

func runPoint(ctx context.Context, plan comparePlan, pt loadPoint, servers map[string]*server, log zerolog.Logger) *pointResult {
	pr := &pointResult{Point: pt, Runs: map[string][]*loadResult{}, Errs: map[string]error{}}
	kinds := serverKinds
	if pt.GatewayOnly {
		kinds = []string{kindGateway}
	}
	for round := range plan.Rounds {
		for _, kind := range kinds {
			cfg := loadConfig{
				Target: target{Addr: servers[kind].Addr}, Conns: pt.Conns, Depth: plan.Depth,
				Duration: plan.Duration, Warmup: plan.Warmup, Method: pt.Method, Params: []byte(pt.Params), Size: pt.Size,
			}
			res, err := runLoad(ctx, cfg, log)
			if err != nil {
				pr.Errs[kind] = err
			}
			if res != nil {
				pr.Runs[kind] = append(pr.Runs[kind], res)
			}
			log.Info().Str("point", pt.label()).Int("round", round+1).Str("server", kind).
				Str("rate", fmtRate(rateOf(res))).Err(err).Msg("run")
			if ctx.Err() != nil {
				return pr
			}
		}
	}
	return pr
}

func rateOf(r *loadResult) float64 {
	if r == nil {
		return 0
	}
	return r.Rate()
}

// runIdlePoint starts a fresh gateway with a short keepalive interval and
// holds the point's connections through the keepalive rounds.
func runIdlePoint(ctx context.Context, plan comparePlan, bins binaries, ip idlePoint, profileDir string, log zerolog.Logger) (idleRow, error) {
	row := idleRow{Server: kindGateway, TLS: ip.TLS}
	o := serverOpts{KeepaliveInterval: plan.IdleKeepalive, KeepaliveTimeout: 10 * plan.IdleKeepalive, Pprof: true}
	tf := targetFlags{timeout: 30 * time.Second}
	if ip.TLS {
		dir, err := os.MkdirTemp("", "skillgate-bench-tls-")
		if err != nil {
			return row, err
		}
		defer os.RemoveAll(dir)
		if o.CertFile, o.KeyFile, _, err = selfSigned(dir); err != nil {
			return row, err
		}
		o.TLS, tf.tls, tf.caFile = true, true, o.CertFile
	}
	srv, err := startServer(ctx, kindGateway, bins, o, log)
	if err != nil {
		row.Err = err
		return row, err
	}
	defer srv.stop()
	tf.addr = srv.Addr
	t, err := tf.target(nil)
	if err != nil {
		return row, err
	}
	conns := clampConns(ip.Conns)
	cfg := idleConfig{
		Target: t, Conns: conns, Rounds: plan.IdleRounds, Hold: idleSteadyHold,
		HoldMax: idleSteadyHold + time.Duration(plan.IdleRounds*4+10)*plan.IdleKeepalive, ServerPID: srv.PID(),
		MetricsURL: srv.MetricsURL(), DialConcurrency: 64, WorkerArgs: tf.args(),
	}
	if profileDir != "" && ip.Conns == targetIdlePoint {
		cfg.WhileHeld = func() { row.Heap = takeHeapProfile(ctx, srv, bins.Gateway, profileDir, ip) }
	}
	log.Info().Int("conns", conns).Bool("tls", ip.TLS).Msg("idle memory")
	row.Res, row.Err = runIdle(ctx, cfg, log)
	return row, row.Err
}

// clampConns keeps an idle point within what the server process can hold:
// its open-file limit is this machine's hard limit, and it needs a few
// descriptors of its own.
// idleSteadyHold is how long idle connections are held before the server's
// memory is read: past the gateway's first check for free heap to return to
// the system (every 15 s), so the figure is the steady state of idle
// connections, not the leftover of setting them up.
const idleSteadyHold = 20 * time.Second

func clampConns(n int) int {
	limit, err := raiseNofile()
	if err != nil || limit == 0 {
		return n
	}
	return min(n, int(limit)-64)
}
