package sandbox

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// take returns a warm sandbox, or starts one when the pool is empty. The
// caller kicks the refiller (see refillDelay). A run with network always
// gets a new sandbox: its seccomp and Landlock rules are set before Python
// starts, and the pool's are those of runs without network. So does a run
// of another environment than the pool's, from that environment's
// template.
func (r *Runner) take(ctx context.Context, network bool, env Environment) (*sandbox, error) {
	if network || env.Key != r.WarmEnvironment().Key {
		return r.spawn(network, env)
	}
	if sb := r.takeWarm(); sb != nil {
		return sb, nil
	}
	if r.poolSize.Load() == 0 {
		return r.spawn(false, env)
	}
	return r.awaitStart(ctx)
}

// usable: a pooled sandbox can still take a job of the pool's environment
// (the pool changes environment with SetWarmEnvironment).
func (r *Runner) usable(sb *sandbox) bool {
	return sb.idle() && sb.env.Key == r.WarmEnvironment().Key
}

// takeWarm returns a pooled sandbox that can still take a job, or nil.
func (r *Runner) takeWarm() *sandbox {
	for {
		select {
		case sb := <-r.pool:
			if r.usable(sb) {
				return sb
			}
			r.teardown(sb)
		default:
			return nil
		}
	}
}

type started struct {
	sb  *sandbox
	err error
}

// awaitStart serves a run that found the pool empty with the first sandbox
// ready. It starts one of its own only when no start is under way (the
// refiller's may have failed); otherwise it waits for the starts under
// way, and the refiller widens with the runs waiting (refillWidth). More
// starts at once would not come sooner: they share the same cores and
// finish later together, and the waiting run's latency is that of the
// first to finish.
func (r *Runner) awaitStart(ctx context.Context) (*sandbox, error) {
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	r.kick()
	for {
		ended := r.starts.next()
		if r.starts.begin(1) {
			return r.raceOwn()
		}
		select {
		case sb := <-r.pool:
			if r.usable(sb) {
				return sb, nil
			}
			r.teardown(sb)
		case <-ended:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.closing:
			return nil, ErrClosed
		}
	}
}

// raceOwn starts the run's own sandbox, its start already begun, and
// hands the run whichever is ready first: that one or a pooled one.
func (r *Runner) raceOwn() (*sandbox, error) {
	own := make(chan started, 1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		sb, err := r.spawn(false, r.WarmEnvironment())
		own <- started{sb, err}
	}()
	for {
		select {
		case s := <-own:
			r.starts.end()
			return s.sb, s.err
		case sb := <-r.pool:
			if !r.usable(sb) {
				r.teardown(sb)
				continue
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				if s := <-own; s.err == nil {
					r.offer(s.sb)
				}
				r.starts.end()
			}()
			return sb, nil
		}
	}
}

// offer pools a started sandbox if the pool has room and the Runner is
// open, and tears it down otherwise.
func (r *Runner) offer(sb *sandbox) {
	if !r.isClosing() && len(r.pool) < int(r.poolSize.Load()) {
		select {
		case r.pool <- sb:
			return
		default:
		}
	}
	r.teardown(sb)
}

// kick wakes the refiller.
func (r *Runner) kick() {
	select {
	case r.refill <- struct{}{}:
	default:
	}
}

// refiller keeps the pool at poolSize sandboxes, with up to refillWidth
// starts under way, and begins the next as soon as one ends rather than
// in batches: sandboxes become ready one after another instead of in
// bunches with gaps between. Failed starts back off.
func (r *Runner) refiller() {
	defer close(r.refillDone)
	done := make(chan error, maxStarts())
	inflight := 0
	backoff := 100 * time.Millisecond
	var retry <-chan time.Time // set while backing off
	for {
		ended := r.starts.next()
		if retry == nil && !r.isClosing() && r.poolDeficit() > inflight && r.starts.begin(r.refillWidth()) {
			inflight++
			go func() {
				sb, err := r.spawn(false, r.WarmEnvironment())
				if err == nil {
					r.offer(sb)
				}
				r.starts.end() // after offer: a run it wakes finds the sandbox pooled
				done <- err
			}()
			continue
		}
		select {
		case err := <-done:
			inflight--
			if err == nil {
				backoff = 100 * time.Millisecond
				continue
			}
			r.log.Error().Err(err).Msg("sandbox: warm start failed")
			if retry == nil {
				retry = time.After(backoff)
				backoff = min(2*backoff, 10*time.Second)
			}
		case <-retry:
			retry = nil
		case <-ended:
		case <-r.refill:
		case <-r.closing:
			for ; inflight > 0; inflight-- {
				<-done
			}
			return
		}
	}
}

// refillWidth is how many pool sandboxes may start at once: one per run
// that waits for one (for a sandbox, or for a worker first), at least one
// and at most maxStarts. With no run waiting, the refill never takes more
// than a core from the runs in progress; a run waiting alone gets the next
// sandbox soonest from a single start, which then has the cores to itself.
func (r *Runner) refillWidth() int {
	return min(max(1, int(r.waiting.Load()+r.queued.Load())), maxStarts())
}

// maxStarts bounds the pool sandboxes starting at once: one per CPU. A
// start from a template is CPU work (forks, copy-on-write faults, fresh
// namespaces); more at once than cores only makes each one, and the run
// waiting for it, slower.
func maxStarts() int { return max(1, runtime.NumCPU()) }

func (r *Runner) poolDeficit() int { return int(r.poolSize.Load()) - len(r.pool) }

// startGate counts the pool sandboxes starting, for refillWidth, Stats and
// awaitStart, and wakes those waiting whenever a start ends.
type startGate struct {
	mu    sync.Mutex
	n     int
	ended chan struct{} // closed, and replaced, when a start ends
}

func newStartGate() *startGate { return &startGate{ended: make(chan struct{})} }

// begin counts a start if fewer than limit are under way.
func (g *startGate) begin(limit int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n >= limit {
		return false
	}
	g.n++
	return true
}

func (g *startGate) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	close(g.ended)
	g.ended = make(chan struct{})
}

// count is the number of starts under way (Stats.Starting).
func (g *startGate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// next returns a channel closed when a start now under way ends.
func (g *startGate) next() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ended
}
