package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/internal/testlog"
)

func TestStartGate(t *testing.T) {
	g := newStartGate()
	ended := g.next()
	require.True(t, g.begin(2))
	require.True(t, g.begin(2))
	assert.False(t, g.begin(2), "a start beyond the limit")
	assert.False(t, g.begin(1), "a start when one may be under way and two are")
	select {
	case <-ended:
		t.Fatal("woken before a start ended")
	default:
	}
	g.end()
	select {
	case <-ended:
	default:
		t.Fatal("a start's end wakes those waiting")
	}
	select {
	case <-g.next():
		t.Fatal("the next end is a new one")
	default:
	}
	assert.True(t, g.begin(2), "the ended start's place is free")
	g.end()
	g.end()
	assert.True(t, g.begin(1), "nothing under way")
	g.end()
}

// TestPoolStartsFollowWaitingRuns: runs back to back that find the pool
// empty never have more sandboxes starting than runs waiting (one per CPU
// at most); one run alone waits for one start at a time.
func TestPoolStartsFollowWaitingRuns(t *testing.T) {
	for _, clients := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d at once", clients), func(t *testing.T) {
			r := ownRunner(t, func(c *Config) { c.Workers, c.WarmPool = 2, 2 })
			var most atomic.Int64
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				for {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Microsecond):
					}
					if n := int64(r.Stats().Starting); n > most.Load() {
						most.Store(n)
					}
				}
			}()
			results := make(chan *Result, clients*12)
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for range 12 {
						results <- runTrivial(r)
					}
				})
			}
			wg.Wait()
			close(results)
			for res := range results {
				requireCompleted(t, res)
			}
			close(stop)
			<-stopped
			assert.Positive(t, most.Load(), "starts were seen")
			assert.LessOrEqual(t, most.Load(), int64(min(clients, runtime.NumCPU())), "sandboxes starting at once")
		})
	}
}

// TestRunWaitingForAStartIsCanceled: a run that found the pool empty
// waits for the start under way instead of starting another, and its
// context still ends the wait.
func TestRunWaitingForAStartIsCanceled(t *testing.T) {
	hold := make(chan struct{})
	var armed atomic.Bool
	var held atomic.Int64
	r := hookedRunner(t, testHooks{startFault: func() error {
		if !armed.Load() {
			return nil
		}
		held.Add(1)
		defer held.Add(-1)
		<-hold
		return nil
	}}, func(c *Config) { c.WarmPool = 1 })
	defer close(hold)
	require.Eventually(t, func() bool { return r.Stats().WarmReady == 1 }, 30*time.Second, 10*time.Millisecond)
	armed.Store(true)
	requireCompleted(t, run(t, r, trivialCode, nil)) // the pooled one
	require.Eventually(t, func() bool { return held.Load() == 1 }, 10*time.Second, time.Millisecond, "its refill holds")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, Job{RunID: t.Name(), Code: trivialCode})
		done <- err
	}()
	require.Eventually(t, func() bool { return r.waiting.Load() == 1 }, 10*time.Second, time.Millisecond, "the run waits")
	assert.Equal(t, int64(1), held.Load(), "no second start for one waiting run")
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("a canceled run still waits for a sandbox")
	}
	// Its worker is free (the first run's goes once that sandbox is torn down).
	assert.Eventually(t, func() bool { return r.Stats().Running == 0 }, 10*time.Second, time.Millisecond)
}

// TestFailingStartsReachTheWaitingRun: when starts fail, a run that finds
// the pool empty gets the failure as a sandbox error, not a wait for the
// refiller's back-off; once starts work again, runs do too.
func TestFailingStartsReachTheWaitingRun(t *testing.T) {
	var broken atomic.Bool
	r := hookedRunner(t, testHooks{startFault: func() error {
		if broken.Load() {
			return errors.New("no room for a sandbox")
		}
		return nil
	}}, func(c *Config) { c.WarmPool = 1 })
	require.Eventually(t, func() bool { return r.Stats().WarmReady == 1 }, 30*time.Second, 10*time.Millisecond)
	broken.Store(true)
	requireCompleted(t, run(t, r, trivialCode, nil)) // the pooled one
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := r.Run(ctx, Job{RunID: t.Name(), Code: trivialCode})
		cancel()
		require.NoError(t, err)
		require.Equal(t, StatusFailed, res.Status)
		assert.Equal(t, runerror.Sandbox, res.Error.Type)
		assert.Contains(t, res.Error.Message, "no room for a sandbox")
	}
	broken.Store(false)
	requireCompleted(t, run(t, r, trivialCode, nil))
}

// TestRunTakesTheFirstSandboxReady: a run that started a sandbox of its
// own (nothing else was starting) takes a pooled one that is ready first,
// and its own, once started, goes to the pool for the next run.
func TestRunTakesTheFirstSandboxReady(t *testing.T) {
	var armed, refillBroken atomic.Bool
	hold := make(chan struct{})
	var held atomic.Int64
	r := hookedRunner(t, testHooks{startFault: func() error {
		switch {
		case !armed.Load():
		case runsOwnStart():
			if held.Add(1) == 1 {
				<-hold // the first run's own start
			}
		case refillBroken.Load():
			return errors.New("no room for a sandbox")
		}
		return nil
	}}, func(c *Config) { c.Workers, c.WarmPool = 1, 1 })
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release()
	require.Eventually(t, func() bool { return r.Stats().WarmReady == 1 }, 30*time.Second, 10*time.Millisecond)
	// The refiller's starts fail: the pool stays empty once its sandbox
	// is taken, and the next run starts its own when none is under way.
	armed.Store(true)
	refillBroken.Store(true)
	requireCompleted(t, run(t, r, trivialCode, nil))
	first, second := make(chan *Result, 1), make(chan *Result, 1)
	go func() { first <- runTrivial(r) }()
	require.Eventually(t, func() bool { return held.Load() == 1 && r.waiting.Load() == 1 }, 10*time.Second, time.Millisecond,
		"the first run waits for its own start")
	// A second run queues for the worker: the refiller widens to it once
	// its back-off ends, and its sandbox, no longer refused, is ready first.
	go func() { second <- runTrivial(r) }()
	refillBroken.Store(false)
	select {
	case res := <-first:
		requireCompleted(t, res)
	case <-time.After(30 * time.Second):
		t.Fatal("the first run waited for its own start, held, though a pooled sandbox was ready")
	}
	assert.GreaterOrEqual(t, r.Stats().Starting, 1, "its own start is still held")
	release()
	select {
	case res := <-second:
		requireCompleted(t, res)
	case <-time.After(30 * time.Second):
		t.Fatal("the second run did not get the sandbox the first one started")
	}
	require.Eventually(t, func() bool { s := r.Stats(); return s.Starting == 0 && s.Running == 0 }, 30*time.Second, time.Millisecond)
}

// runTrivial runs the trivial job from any goroutine: an error comes back
// as a failed result for the test's own goroutine to report.
func runTrivial(r *Runner) *Result {
	res, err := r.Run(context.Background(), Job{RunID: "pool", Code: trivialCode})
	if err != nil {
		return failed(runerror.Sandbox, err.Error())
	}
	return res
}

// runsOwnStart reports whether this start is a run's own (raceOwn's)
// rather than the refiller's.
func runsOwnStart() bool {
	buf := make([]byte, 4096)
	return strings.Contains(string(buf[:runtime.Stack(buf, false)]), ".raceOwn.")
}

// TestOfferKeepsThePoolAtItsSize: a sandbox offered to a pool already at
// its size (cut below the channel's room, as --sandbox-warm-memory does)
// is torn down, not pooled.
func TestOfferKeepsThePoolAtItsSize(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.WarmPool = 2 })
	require.Eventually(t, func() bool { return r.Stats().WarmReady == 2 }, 30*time.Second, 10*time.Millisecond)
	r.poolSize.Store(1)
	sb := <-r.pool
	r.offer(sb)
	assert.Equal(t, 1, r.Stats().WarmReady, "the pool stays at its size")
	select {
	case <-sb.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the sandbox offered past the pool's size was not torn down")
	}
}

// TestRunEndedWithoutResultIsLogged: a run that ends with no result (its
// context ended while its sandbox was starting) is logged at debug level
// with its error.
func TestRunEndedWithoutResultIsLogged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var armed atomic.Bool
	var logs testlog.Buffer
	r := hookedRunner(t, testHooks{startFault: func() error {
		if !armed.Load() {
			return nil
		}
		cancel() // the run's context ends while its sandbox starts
		return context.Canceled
	}}, func(c *Config) {
		c.WarmPool = 0
		c.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel)
	})
	armed.Store(true)
	res, err := r.Run(ctx, Job{RunID: "waits", Code: trivialCode})
	assert.Nil(t, res)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, logs.String(), `"run_id":"waits","error":"context canceled","message":"sandbox run"`)
}
