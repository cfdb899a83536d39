package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Targets of a run whose code imports a preloaded module, against a bare
// interpreter that imports it, measured in the same run.
const (
	targetPreloadLatency    = 0.1 // p50, × the bare import
	targetPreloadThroughput = 10  // sustained rate, × the bare import rate
	preloadConcurrency      = 2   // runs in flight, bare imports alike
)

// preloadPlan is what cmdPreload measures.
type preloadPlan struct {
	Module   string
	Rounds   int
	Paced    int           // paced runs (and bare imports) per round
	Duration time.Duration // sustained window per round, gateway and bare alike
}

// preloadResult holds the latencies and rates of runs importing the
// preloaded module and of bare imports, and the template's memory.
type preloadResult struct {
	Plan                       preloadPlan
	Paced, Bare                Histogram
	Runs, BareRuns             uint64
	RunElapsed, BareElapsed    time.Duration
	TemplateBytes, WarmSandbox int64
	Templates                  int
	Err                        error
}

// cmdPreload starts a gateway whose base environment preloads a module
// (pandas by default: Debian's python3-pandas) and measures a run_code
// that imports it against `python3 -c "import pandas"`.
func cmdPreload(ctx context.Context, args []string, stdout io.Writer, log zerolog.Logger) error {
	fs := flag.NewFlagSet("preload", flag.ContinueOnError)
	plan := preloadPlan{}
	var root, bin, out string
	fs.StringVar(&plan.Module, "module", "pandas", "the module the base environment preloads and the runs import")
	fs.IntVar(&plan.Rounds, "rounds", 3, "alternated rounds")
	fs.IntVar(&plan.Paced, "paced", 20, "paced runs (and bare imports) per round")
	fs.DurationVar(&plan.Duration, "duration", 3*time.Second, "sustained window of each round, gateway and bare alike")
	fs.StringVar(&root, "root", ".", "repository root (holds go.mod)")
	fs.StringVar(&bin, "bin-dir", "bin/bench", "where to build the gateway")
	fs.StringVar(&out, "out", "", "also write the Markdown report to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if plan.Rounds < 1 || plan.Paced < 1 || plan.Duration <= 0 || plan.Module == "" {
		return fmt.Errorf("%w: --rounds and --paced must be ≥ 1, --duration > 0, --module set", errUsage)
	}
	gateway, err := buildGateway(ctx, root, bin)
	if err != nil {
		return err
	}
	started := time.Now()
	res := runPreload(ctx, binaries{Gateway: gateway}, plan, log)
	var b strings.Builder
	fmt.Fprintf(&b, "## skillgate-bench preload\n\n- date: %s (took %s)\n- machine: %s\n- command: `%s`\n\n",
		started.UTC().Format("2006-01-02 15:04 MST"), time.Since(started).Round(time.Second), machine(),
		strings.Join(append([]string{"skillgate-bench", "preload"}, args...), " "))
	res.markdown(&b)
	fmt.Fprint(stdout, b.String())
	if out != "" {
		if werr := os.WriteFile(out, []byte(b.String()), 0o644); werr != nil {
			return werr
		}
	}
	return res.Err
}

func (p preloadPlan) params() []byte {
	code := fmt.Sprintf("import %s\ndef main(args):\n    return {}\n", p.Module)
	data, _ := json.Marshal(map[string]string{"language": "python", "code": code})
	return data
}

// runPreload alternates, round after round, paced runs with paced bare
// imports, then a sustained window of runs with one of bare imports.
func runPreload(ctx context.Context, bins binaries, plan preloadPlan, log zerolog.Logger) *preloadResult {
	res := &preloadResult{Plan: plan}
	res.Err = res.measure(ctx, bins, log)
	return res
}

func (res *preloadResult) measure(ctx context.Context, bins binaries, log zerolog.Logger) error {
	plan := res.Plan
	bare := "import " + plan.Module
	if err := bareStarts(ctx, bare, 1, &Histogram{}); err != nil {
		return fmt.Errorf("the host's Python cannot import %s: %w", plan.Module, err)
	}
	srv, err := startServer(ctx, kindGateway, bins, serverOpts{Extra: []string{"--python-preload", plan.Module}}, log)
	if err != nil {
		return err
	}
	defer srv.stop()
	conn, err := dialInitialized(ctx, srv.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	log.Info().Str("module", plan.Module).Int("rounds", plan.Rounds).Msg("preloaded imports against bare imports")
	for range plan.Rounds {
		if err := pacedRuns(ctx, conn, plan.params(), plan.Paced, &res.Paced); err != nil {
			return err
		}
		if err := bareStarts(ctx, bare, plan.Paced, &res.Bare); err != nil {
			return err
		}
		lr, err := runCodeWindow(ctx, srv.Addr, plan.params(), preloadConcurrency, plan.Duration, log)
		if err != nil {
			return err
		}
		res.Runs += lr.Responses
		res.RunElapsed += lr.Elapsed
		n, d, err := bareSpawnLoop(ctx, bare, preloadConcurrency, plan.Duration, &Histogram{})
		if err != nil {
			return err
		}
		res.BareRuns += n
		res.BareElapsed += d
	}
	return res.readTemplates(srv.MetricsAddr)
}

// readTemplates reads the templates' count and memory, and one warm
// sandbox's, from the gateway's metrics.
func (res *preloadResult) readTemplates(metricsAddr string) error {
	lines, err := scrapeLines("http://" + metricsAddr + "/metrics")
	if err != nil {
		return err
	}
	for _, l := range lines {
		name, value, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "skillgate_sandbox_template_bytes":
			res.TemplateBytes = int64(v)
		case "skillgate_sandbox_templates":
			res.Templates = int(v)
		case "skillgate_sandbox_warm_sandbox_bytes":
			res.WarmSandbox = int64(v)
		}
	}
	return nil
}

func (res *preloadResult) latencyRatio() float64 {
	return ratioOf(float64(res.Paced.Quantile(0.5)), float64(res.Bare.Quantile(0.5)))
}

func (res *preloadResult) throughputRatio() float64 {
	return ratioOf(perSecond(res.Runs, res.RunElapsed), perSecond(res.BareRuns, res.BareElapsed))
}

func (res *preloadResult) markdown(b *strings.Builder) {
	p := res.Plan
	fmt.Fprintf(b, "### A run importing a preloaded `%s` against a bare import\n\n", p.Module)
	if res.Err != nil {
		fmt.Fprintf(b, "Not measured: %v\n\n", res.Err)
		return
	}
	fmt.Fprintf(b, "The gateway runs with `--python-preload %s`: its warm pool's template imports it once. A `run_code` whose code "+
		"is `import %s` is measured paced (one in flight, pool warm) and sustained (%d in flight), in rounds alternating with "+
		"`%s -c \"import %s\"` on the host, paced and %d at once.\n\n", p.Module, p.Module, preloadConcurrency, bareInterpreter, p.Module, preloadConcurrency)
	b.WriteString("| | count | p50 | p99 | per second |\n|---|--:|--:|--:|--:|\n")
	fmt.Fprintf(b, "| `run_code` importing `%s` | %d | %s | %s | %.1f |\n", p.Module, res.Paced.Count(),
		fmtDur(res.Paced.Quantile(0.5)), fmtDur(res.Paced.Quantile(0.99)), perSecond(res.Runs, res.RunElapsed))
	fmt.Fprintf(b, "| bare `python3 -c \"import %s\"` | %d | %s | %s | %.1f |\n\n", p.Module, res.Bare.Count(),
		fmtDur(res.Bare.Quantile(0.5)), fmtDur(res.Bare.Quantile(0.99)), perSecond(res.BareRuns, res.BareElapsed))
	fmt.Fprintf(b, "Templates: %d, %s together (one warm sandbox: %s).\n\n", res.Templates, fmtMiB(res.TemplateBytes), fmtMiB(res.WarmSandbox))
	b.WriteString("| target | measured | met |\n|---|---|---|\n")
	lat, thr := res.latencyRatio(), res.throughputRatio()
	fmt.Fprintf(b, "| p50 ≤ %.1f× the bare import | %s | %s |\n", targetPreloadLatency, fmtRatio(lat), met(lat > 0 && lat <= targetPreloadLatency))
	fmt.Fprintf(b, "| sustained rate ≥ %d× the bare import rate | %s | %s |\n\n", targetPreloadThroughput, fmtRatio(thr), met(thr >= targetPreloadThroughput))
}
