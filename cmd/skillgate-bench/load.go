package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// loadConfig describes one load run.
type loadConfig struct {
	Target   target
	Conns    int
	Depth    int           // requests in flight per connection
	Duration time.Duration // measured window (duration mode)
	Warmup   time.Duration // unmeasured load before the window
	Requests int           // > 0: send this many in all and measure them (count mode)
	Method   string
	Params   []byte // a JSON object
	Size     int    // approximate request body size (0: as built)
	NoInit   bool   // skip Initialize
	// DialConcurrency bounds connections being set up at once.
	DialConcurrency int
	// DrainTimeout bounds the wait for outstanding answers after the window.
	DrainTimeout time.Duration
}

// loadResult is what a load run measured.
type loadResult struct {
	Conns      int    // connections that took part
	Responses  uint64 // answers received in the window
	Errors     uint64 // error answers among them
	ErrorCodes map[string]uint64
	Keepalives uint64        // server probes answered
	Elapsed    time.Duration // the window
	Setup      time.Duration // time to open and initialize the connections
	Latency    Histogram
	ConnFailed int   // connections that failed to open or failed mid-run
	FirstErr   error // the first of those failures
}

// Rate returns answers per second over the window.
func (r *loadResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Responses) / r.Elapsed.Seconds()
}

// run phases
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDrain
)

// runState is what the connections of one run share.
type runState struct {
	base    time.Time
	phase   atomic.Int32
	closing atomic.Bool   // connections are being closed on purpose
	stop    chan struct{} // closed when writers must stop
}

func (rs *runState) now() int64 { return int64(time.Since(rs.base)) }

func (cfg *loadConfig) withDefaults() {
	cfg.Conns = max(cfg.Conns, 1)
	cfg.Depth = max(cfg.Depth, 1)
	if cfg.DialConcurrency <= 0 {
		cfg.DialConcurrency = 64
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 10 * time.Second
	}
	if cfg.Target.Timeout <= 0 {
		cfg.Target.Timeout = 10 * time.Second
	}
}

// runLoad opens the connections, drives them and returns what it measured.
func runLoad(ctx context.Context, cfg loadConfig, log zerolog.Logger) (*loadResult, error) {
	cfg.withDefaults()
	tpl, err := newTemplate(cfg.Method, cfg.Params, cfg.Size)
	if err != nil {
		return nil, err
	}
	rs := &runState{base: time.Now(), stop: make(chan struct{})}
	t0 := time.Now()
	conns, failed, firstErr := openLoadConns(ctx, &cfg, &tpl, rs)
	res := &loadResult{Setup: time.Since(t0), ConnFailed: failed, FirstErr: firstErr, ErrorCodes: map[string]uint64{}}
	if len(conns) == 0 {
		return res, fmt.Errorf("%w: %v", errNoConns, firstErr)
	}
	log.Debug().Int("conns", len(conns)).Dur("setup", res.Setup).Msg("connections ready")
	var started int64
	if cfg.Requests > 0 {
		// Count mode measures every answer: the phase must be set before the
		// first request can be answered.
		rs.phase.Store(phaseMeasure)
		started = rs.now()
	}
	for _, c := range conns {
		go c.readLoop()
		go c.writeLoop()
	}
	if cfg.Requests > 0 {
		err = driveCount(ctx, &cfg, rs, conns, res, started)
	} else {
		err = driveDuration(ctx, &cfg, rs, conns, res)
	}
	closeLoadConns(rs, conns)
	collect(res, conns)
	return res, err
}

// driveDuration warms up, measures for the window, then drains.
func driveDuration(ctx context.Context, cfg *loadConfig, rs *runState, conns []*loadConn, res *loadResult) error {
	if !sleepCtx(ctx, cfg.Warmup) {
		return ctx.Err()
	}
	rs.phase.Store(phaseMeasure)
	t0 := time.Now()
	ok := sleepCtx(ctx, cfg.Duration)
	rs.phase.Store(phaseDrain)
	res.Elapsed = time.Since(t0)
	close(rs.stop)
	if !ok {
		return ctx.Err()
	}
	return drain(ctx, cfg, conns)
}

// driveCount measures from the first request to the last answer.
func driveCount(ctx context.Context, cfg *loadConfig, rs *runState, conns []*loadConn, res *loadResult, t0 int64) error {
	for _, c := range conns {
		select {
		case <-c.writerDone:
		case <-ctx.Done():
			close(rs.stop)
			return ctx.Err()
		}
	}
	close(rs.stop)
	err := drain(ctx, cfg, conns)
	var last int64
	for _, c := range conns {
		last = max(last, c.lastAt.Load())
	}
	res.Elapsed = time.Duration(last - t0)
	return err
}

// drain waits until every writer has stopped and every request sent has
// been answered (or its connection has failed).
func drain(ctx context.Context, cfg *loadConfig, conns []*loadConn) error {
	deadline := time.Now().Add(cfg.DrainTimeout)
	for _, c := range conns {
		<-c.writerDone
	}
	for {
		outstanding := int64(0)
		for _, c := range conns {
			if !c.failed.Load() {
				outstanding += c.inflight.Load()
			}
		}
		if outstanding == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d", errDrainTimeout, outstanding)
		}
		if !sleepCtx(ctx, 2*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func closeLoadConns(rs *runState, conns []*loadConn) {
	rs.closing.Store(true)
	for _, c := range conns {
		_ = c.nc.Close()
	}
	for _, c := range conns {
		<-c.readerDone
		<-c.writerDone
	}
}

// collect merges the per-connection counters into res.
func collect(res *loadResult, conns []*loadConn) {
	res.Conns = len(conns)
	for _, c := range conns {
		res.Responses += c.n
		res.Errors += c.errs
		res.Keepalives += c.keepalives
		res.Latency.Merge(&c.hist)
		for k, v := range c.codes {
			res.ErrorCodes[k] += v
		}
		if err := cmpFirst(c.err, c.werr); err != nil {
			res.ConnFailed++
			res.FirstErr = cmpFirst(res.FirstErr, err)
		}
	}
}

// openLoadConns opens and initializes the connections, a bounded number at
// a time. It returns those that succeeded, the count of those that failed
// and the first failure.
func openLoadConns(ctx context.Context, cfg *loadConfig, tpl *template, rs *runState) ([]*loadConn, int, error) {
	quotas := splitQuota(cfg.Requests, cfg.Conns)
	conns := make([]*loadConn, cfg.Conns)
	errs := make([]error, cfg.Conns)
	sem := make(chan struct{}, cfg.DialConcurrency)
	var wg sync.WaitGroup
	for i := range cfg.Conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			conns[i], errs[i] = openLoadConn(ctx, cfg, i, tpl, rs, quotas[i])
		})
	}
	wg.Wait()
	var ok []*loadConn
	failed := 0
	var first error
	for i, c := range conns {
		if c != nil {
			ok = append(ok, c)
			continue
		}
		failed++
		first = cmpFirst(first, errs[i])
	}
	return ok, failed, first
}

func cmpFirst(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

// splitQuota divides total requests among n connections (-1 each when
// total is 0: no limit).
func splitQuota(total, n int) []int64 {
	q := make([]int64, n)
	for i := range q {
		q[i] = -1
		if total > 0 {
			q[i] = int64(total / n)
			if i < total%n {
				q[i]++
			}
		}
	}
	return q
}

func openLoadConn(ctx context.Context, cfg *loadConfig, i int, tpl *template, rs *runState, quota int64) (*loadConn, error) {
	nc, err := cfg.Target.dial(ctx, i)
	if err != nil {
		return nil, err
	}
	c := newLoadConn(newWireConn(nc), tpl, rs, cfg.Depth, quota)
	if !cfg.NoInit {
		ka, err := c.initialize(cfg.Target.Timeout)
		if err != nil {
			_ = nc.Close()
			return nil, err
		}
		c.keepalives += uint64(ka)
	}
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
