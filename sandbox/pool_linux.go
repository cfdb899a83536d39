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
	for {
		select {
		case sb := <-r.pool:
			if sb.idle() {
				return sb, nil
			}
			r.teardown(sb)
			continue
		default:
		}
		return r.spawn(false)
	}
}

// kick wakes the refiller.
func (r *Runner) kick() {
	select {
	case r.refill <- struct{}{}:
	default:
	}
}

// refiller keeps the pool at WarmPool sandboxes, one start at a time so
// that refilling does not crowd out running jobs. Failed starts back off.
func (r *Runner) refiller() {
	defer close(r.refillDone)
	backoff := 100 * time.Millisecond
	for {
		for len(r.pool) < r.cfg.WarmPool && !r.isClosing() {
			sb, err := r.spawn(false)
			if err != nil {
				r.log.Error().Err(err).Msg("sandbox: warm start failed")
				if !r.sleep(backoff) {
					return
				}
				backoff = min(2*backoff, 10*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			r.pool <- sb // only the refiller adds, so there is room
		}
		select {
		case <-r.refill:
		case <-r.closing:
			return
		}
	}
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
