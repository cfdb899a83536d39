package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// idleConfig describes an idle-memory run.
type idleConfig struct {
	Target target
	Conns  int
	NoInit bool
	// Rounds of server keepalives to hold the connections through: the run
	// waits until Rounds × Conns probes were answered (0: just Hold).
	Rounds  int
	Hold    time.Duration // minimum hold time once connected
	HoldMax time.Duration // give up waiting for the rounds after this
	// ServerPID is the process whose memory is measured; MetricsURL, when
	// set, is its Prometheus endpoint for Go heap and stack figures.
	ServerPID  int
	MetricsURL string
	// PerProcess bounds the connections one process holds; more are spread
	// over worker processes (0: derived from the open-file limit).
	PerProcess      int
	DialConcurrency int
	// WorkerArgs are the target flags passed to worker processes.
	WorkerArgs []string
	// WhileHeld, when set, runs after the last sample, before the
	// connections close (to take a heap profile of the server).
	WhileHeld func()
}

// idleResult is what an idle run measured. Memory figures are of the
// server process: before the connections, once they are all open and
// initialized, and after the keepalive rounds.
type idleResult struct {
	Conns, Failed            int
	Dead                     int64
	Probes                   uint64
	Setup, Held              time.Duration
	Before, Connected, After memSample
	FirstErr                 string
}

// perConn returns the RSS growth per held connection between two samples.
func (r *idleResult) perConn(a, b memSample) float64 {
	if r.Conns == 0 {
		return 0
	}
	return float64(b.RSS-a.RSS) / float64(r.Conns)
}

// runIdle opens the connections, holds them through the keepalive rounds
// and samples the server's memory around them.
func runIdle(ctx context.Context, cfg idleConfig, log zerolog.Logger) (*idleResult, error) {
	if cfg.ServerPID <= 0 {
		return nil, fmt.Errorf("%w: idle needs the server's pid", errUsage)
	}
	limit, err := raiseNofile()
	if err != nil {
		return nil, err
	}
	res := &idleResult{}
	if res.Before, err = readMem(cfg.ServerPID, cfg.MetricsURL); err != nil {
		return nil, err
	}
	start := time.Now()
	holders, err := startHolders(ctx, &cfg, limit, log)
	if err != nil {
		return nil, err
	}
	defer closeHolders(holders)
	st, err := sumStatus(holders)
	if err != nil {
		return nil, err
	}
	res.Setup, res.Conns, res.Failed = time.Since(start), st.Open, st.Failed
	if st.Open == 0 {
		res.FirstErr = st.Err
		return res, fmt.Errorf("%w: %s", errNoConns, st.Err)
	}
	log.Info().Int("open", st.Open).Int("failed", st.Failed).Dur("setup", res.Setup).Msg("connections held")
	if res.Connected, err = readMem(cfg.ServerPID, cfg.MetricsURL); err != nil {
		return nil, err
	}
	res.Held, err = holdRounds(ctx, &cfg, holders, st.Probes, res)
	if err != nil {
		return nil, err
	}
	res.After, err = readMem(cfg.ServerPID, cfg.MetricsURL)
	if cfg.WhileHeld != nil {
		cfg.WhileHeld()
	}
	return res, err
}

// holdRounds waits through the keepalive rounds and records the probes.
func holdRounds(ctx context.Context, cfg *idleConfig, holders []holder, base uint64, res *idleResult) (time.Duration, error) {
	t0 := time.Now()
	want := uint64(cfg.Rounds*res.Conns) + base
	var last holdStatus
	var lastErr error
	waitRounds(ctx, want, cfg.Hold, max(cfg.HoldMax, cfg.Hold), func() uint64 {
		last, lastErr = sumStatus(holders)
		return last.Probes
	})
	if lastErr != nil {
		return 0, lastErr
	}
	if last, lastErr = sumStatus(holders); lastErr != nil {
		return 0, lastErr
	}
	res.Probes, res.Dead, res.FirstErr = last.Probes-base, last.Dead, last.Err
	return time.Since(t0), ctx.Err()
}

// holder is a group of held connections, in this process or a worker.
type holder interface {
	status() (holdStatus, error)
	close() error
}

type localHolder struct {
	set    *holdSet
	failed int
}

func (l *localHolder) status() (holdStatus, error) { return l.set.status(l.failed), nil }

func (l *localHolder) close() error {
	l.set.close()
	return nil
}

// startHolders opens the connections in this process when they fit its
// open-file limit, else in worker processes of PerProcess each.
func startHolders(ctx context.Context, cfg *idleConfig, limit uint64, log zerolog.Logger) ([]holder, error) {
	per := cfg.PerProcess
	if per <= 0 {
		per = max(int(limit)-256, 1)
	}
	if cfg.Conns <= per {
		set, failed := holdConns(ctx, cfg.Target, cfg.Conns, 0, cfg.NoInit, cfg.DialConcurrency)
		return []holder{&localHolder{set: set, failed: failed}}, nil
	}
	var hs []holder
	for off := 0; off < cfg.Conns; off += per {
		n := min(per, cfg.Conns-off)
		log.Info().Int("conns", n).Int("offset", off).Msg("starting a worker process")
		w, err := startWorker(ctx, cfg, n, off)
		if err != nil {
			closeHolders(hs)
			return nil, err
		}
		hs = append(hs, w)
	}
	return hs, nil
}

func sumStatus(hs []holder) (holdStatus, error) {
	var sum holdStatus
	var errs []error
	for _, h := range hs {
		st, err := h.status()
		errs = append(errs, err)
		sum.Open += st.Open
		sum.Failed += st.Failed
		sum.Probes += st.Probes
		sum.Dead += st.Dead
		if sum.Err == "" {
			sum.Err = st.Err
		}
	}
	return sum, errors.Join(errs...)
}

func closeHolders(hs []holder) {
	for _, h := range hs {
		_ = h.close()
	}
}
