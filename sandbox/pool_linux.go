package sandbox

import "time"

// take returns a warm sandbox, or starts one when the pool is empty. The
// caller kicks the refiller (see refillDelay). A run with network always
// gets a new sandbox: its seccomp and Landlock rules are set before Python
// starts, and the pool's are those of runs without network.
func (r *Runner) take(network bool) (*sandbox, error) {
	if network {
		return r.spawn(true)
	}
	if sb := r.takeWarm(); sb != nil {
		return sb, nil
	}
	if r.poolSize.Load() == 0 {
		return r.spawn(false)
	}
	return r.race()
}

// takeWarm returns a pooled sandbox that can still take a job, or nil.
func (r *Runner) takeWarm() *sandbox {
	for {
		select {
		case sb := <-r.pool:
			if sb.idle() {
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

// race starts a sandbox for a run that found the pool empty, but hands the
// run whichever is ready first: its own, or one the refiller is finishing.
// The loser goes to the pool.
func (r *Runner) race() (*sandbox, error) {
	r.kick()
	own := make(chan started, 1)
	r.starting.Add(1) // until the sandbox is the run's, pooled or gone
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		sb, err := r.spawn(false)
		own <- started{sb, err}
	}()
	for {
		select {
		case s := <-own:
			r.starting.Add(-1)
			return s.sb, s.err
		case sb := <-r.pool:
			if !sb.idle() {
				r.teardown(sb)
				continue
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer r.starting.Add(-1)
				if s := <-own; s.err == nil {
					r.offer(s.sb)
				}
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

// refiller keeps the pool at poolSize sandboxes. It starts as many at
// once as refillWidth allows (at least one), so the pool follows demand
// without crowding out running jobs: while every worker runs, it starts
// one at a time. Failed starts back off.
func (r *Runner) refiller() {
	defer close(r.refillDone)
	backoff := 100 * time.Millisecond
	for {
		for deficit := r.poolDeficit(); deficit > 0 && !r.isClosing(); deficit = r.poolDeficit() {
			if err := r.refillBatch(max(1, min(deficit, r.refillWidth()))); err != nil {
				r.log.Error().Err(err).Msg("sandbox: warm start failed")
				if !r.sleep(backoff) {
					return
				}
				backoff = min(2*backoff, 10*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
		}
		select {
		case <-r.refill:
		case <-r.closing:
			return
		}
	}
}

// refillWidth is how many sandboxes to start at once: one per idle
// worker; from a template one more, since such a start mostly waits on
// forks and the cgroup move rather than using a core.
func (r *Runner) refillWidth() int {
	idle := r.cfg.Workers - int(r.running.Load())
	if r.zygoteOn {
		idle++
	}
	return idle
}

func (r *Runner) poolDeficit() int { return int(r.poolSize.Load()) - len(r.pool) }

// refillBatch starts n sandboxes at once and pools them (a run that raced
// it may have filled the pool meanwhile: then the extra ones go).
func (r *Runner) refillBatch(n int) error {
	errs := make(chan error, n)
	r.starting.Add(int64(n))
	for range n {
		go func() {
			defer r.starting.Add(-1)
			sb, err := r.spawn(false)
			if err == nil {
				r.offer(sb)
			}
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sleep waits d unless the Runner closes first.
func (r *Runner) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.closing:
		return false
	}
}
