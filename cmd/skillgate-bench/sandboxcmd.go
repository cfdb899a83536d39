package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// cmdSandbox measures only the sandbox points of compare: sustained
// run_code at 1 and 4 in flight and cold starts, against bare spawns.
func cmdSandbox(ctx context.Context, args []string, stdout io.Writer, log zerolog.Logger) error {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	plan := sustainedPlan{}
	var root, bin, out, extra string
	fs.IntVar(&plan.Rounds, "rounds", 3, "alternated rounds")
	fs.DurationVar(&plan.Duration, "duration", 3*time.Second, "measured window of each point, gateway and bare alike")
	fs.IntVar(&plan.Cold, "cold", 10, "cold runs (and bare starts) per round; 0 skips cold starts")
	fs.StringVar(&root, "root", ".", "repository root (holds go.mod)")
	fs.StringVar(&bin, "bin-dir", "bin/bench", "where to build the gateway")
	fs.StringVar(&out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&extra, "serve-flags", "", "more flags for the gateway's serve command, space-separated")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if plan.Rounds < 1 || plan.Duration <= 0 || plan.Cold < 0 {
		return fmt.Errorf("%w: --rounds must be ≥ 1, --duration > 0, --cold ≥ 0", errUsage)
	}
	plan.Extra = strings.Fields(extra)
	gateway, err := buildGateway(ctx, root, bin)
	if err != nil {
		return err
	}
	started := time.Now()
	res := runSustained(ctx, binaries{Gateway: gateway}, plan, log)
	var b strings.Builder
	fmt.Fprintf(&b, "## skillgate-bench sandbox\n\n- date: %s (took %s)\n- machine: %s\n- command: `%s`\n\n",
		started.UTC().Format("2006-01-02 15:04 MST"), time.Since(started).Round(time.Second), machine(),
		strings.Join(append([]string{"skillgate-bench", "sandbox"}, args...), " "))
	res.markdown(&b)
	b.WriteString("| target | measured | met |\n|---|---|---|\n")
	for _, r := range res.targets() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	fmt.Fprint(stdout, b.String())
	if out != "" {
		if werr := os.WriteFile(out, []byte(b.String()), 0o644); werr != nil {
			return werr
		}
	}
	return res.Err
}

// buildGateway builds the gateway of the repository at root into binDir
// and returns the binary's absolute path.
func buildGateway(ctx context.Context, root, binDir string) (string, error) {
	dir, err := filepath.Abs(binDir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = goBuild(ctx, root, "-o", filepath.Join(dir, "skillgate"), "./cmd/skillgate")
	}
	return filepath.Join(dir, "skillgate"), err
}
