package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// soakConfig describes a soak: a gateway this command starts, with a data
// dir, and a steady mixed load from framed, HTTP and MCP clients for a
// long time, sampled at intervals.
type soakConfig struct {
	Bin       string
	Duration  time.Duration
	Interval  time.Duration // between samples
	Pause     time.Duration // each client's pause between operations: the load's pace
	Workers   int           // the gateway's --sandbox-workers
	Retention time.Duration // the gateway's --blob-ttl and --run-retention
	SkillsDir string
}

// parseSoakFlags reads soak's flags; an interval of 0 becomes a
// twentieth of the duration, at least 5 s.
func parseSoakFlags(args []string) (soakConfig, error) {
	var cfg soakConfig
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.StringVar(&cfg.Bin, "bin", "bin/skillgate", "the gateway binary (make build)")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Minute, "how long the load runs")
	fs.DurationVar(&cfg.Interval, "interval", 0, "between samples (0: a twentieth of --duration, at least 5s)")
	fs.DurationVar(&cfg.Pause, "pause", 100*time.Millisecond, "each client's pause between operations")
	fs.IntVar(&cfg.Workers, "sandbox-workers", 2, "the gateway's --sandbox-workers")
	fs.DurationVar(&cfg.Retention, "retention", time.Minute, "the gateway's --blob-ttl and --run-retention: what the data dir holds settles after it")
	fs.StringVar(&cfg.SkillsDir, "skills-dir", "examples/skills", "the gateway's --skills-dir")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = max(cfg.Duration/20, 5*time.Second)
	}
	if cfg.Duration <= 0 || cfg.Interval <= 0 || cfg.Pause < 0 || cfg.Workers < 1 || cfg.Retention <= 0 {
		return cfg, fmt.Errorf("%w: --duration, --interval, --sandbox-workers and --retention must be positive", errUsage)
	}
	return cfg, nil
}

// soakSample is the gateway at one moment.
type soakSample struct {
	At         time.Duration // since the load began
	RSS        int64
	Goroutines int64
	FDs        int64
	DataBytes  int64 // the data dir's files, by allocated blocks
	Ops, Errs  int64 // operations and failed ones so far
}

func cmdSoak(ctx context.Context, args []string, stdout io.Writer, log zerolog.Logger) error {
	cfg, err := parseSoakFlags(args)
	if err != nil {
		return err
	}
	samples, err := runSoak(ctx, cfg, log)
	if len(samples) > 0 {
		writeSoakTable(stdout, cfg, samples)
	}
	if err != nil {
		return err
	}
	verdicts := judgeSoak(samples, cfg)
	writeSoakVerdicts(stdout, verdicts)
	for _, v := range verdicts {
		if !v.Flat {
			return fmt.Errorf("soak: %s grows", v.Name)
		}
	}
	return nil
}

// runSoak starts the gateway and the clients and samples until the
// duration ends.
func runSoak(ctx context.Context, cfg soakConfig, log zerolog.Logger) ([]soakSample, error) {
	dataDir, err := os.MkdirTemp("", "skillgate-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	g, err := startSoakGateway(ctx, cfg, dataDir)
	if err != nil {
		return nil, err
	}
	defer g.stop()
	lctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var c soakCounts
	var wg sync.WaitGroup
	for _, client := range soakClients(g, cfg.Pause) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client.run(lctx, &c, log.With().Str("client", client.name).Logger())
		}()
	}
	log.Info().Dur("duration", cfg.Duration).Dur("interval", cfg.Interval).Msg("soak: load started")
	start := time.Now()
	var samples []soakSample
	sample := func() error {
		s, err := sampleGateway(g, dataDir)
		if err != nil {
			return err
		}
		s.At, s.Ops, s.Errs = time.Since(start).Round(time.Second), c.ops.Load(), c.errs.Load()
		samples = append(samples, s)
		log.Info().Dur("at", s.At).Int64("rss", s.RSS).Int64("goroutines", s.Goroutines).Int64("fds", s.FDs).
			Int64("data_bytes", s.DataBytes).Int64("ops", s.Ops).Int64("errors", s.Errs).Msg("soak: sample")
		return nil
	}
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for err == nil {
		if err = sample(); err != nil {
			break
		}
		select {
		case <-tick.C:
			continue
		case <-lctx.Done():
		case <-g.done:
			err = errors.New("soak: the gateway exited")
		}
		break
	}
	cancel()
	wg.Wait()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return samples, err
}

type soakCounts struct{ ops, errs atomic.Int64 }

func startSoakGateway(ctx context.Context, cfg soakConfig, dataDir string) (*floodGateway, error) {
	return launchGateway(ctx, cfg.Bin, 30*time.Second, "--data-dir", dataDir, "--skills-dir", cfg.SkillsDir,
		"--sandbox-workers", strconv.Itoa(cfg.Workers), "--blob-ttl", cfg.Retention.String(),
		"--run-retention", cfg.Retention.String(), "--drain-timeout", "5s")
}

// sampleGateway reads the gateway's RSS, open descriptors and goroutines
// and the data dir's size.
func sampleGateway(g *floodGateway, dataDir string) (soakSample, error) {
	pid := g.cmd.Process.Pid
	mem, err := readMem(pid, "http://"+g.metrics+"/metrics")
	if err != nil {
		return soakSample{}, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return soakSample{}, err
	}
	size, err := dirBytes(dataDir)
	if err != nil {
		return soakSample{}, err
	}
	return soakSample{RSS: mem.RSS, Goroutines: mem.Goroutines, FDs: int64(len(fds)), DataBytes: size}, nil
}

// dirBytes is what the files under dir take on disk (files removed while
// it walks are skipped).
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += allocated(info)
		return nil
	})
	return n, err
}

// allocated is a file's size on disk: a sparse file counts its blocks.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
