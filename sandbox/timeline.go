package sandbox

import (
	"time"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// Phases of a sandbox start, in order. The host and the sandbox's own
// processes stamp them with CLOCK_MONOTONIC, which every namespace shares,
// so one timeline spans both sides.
const (
	phaseBegin    = iota // host: spawn called
	phasePrepared        // host: directory and cgroup made
	phaseForked          // host: pid 1 exists (clone, id maps, exec); from scratch only
	phaseEntered         // inside: the sandbox's pid 1 runs its own code (from a template: cloned)
	phaseRoot            // inside: namespaces, mounts and pivot_root done (template: also the cgroup move and the job process's fork)
	phasePython          // inside: the Python that will run the job exists (template: it dropped its privileges)
	phaseReady           // host: Python reported ready (interpreter and runtime imported)
	numPhases
)

// phaseNames name the phases for benchmarks and docs.
var phaseNames = [numPhases]string{"begin", "prepared", "forked", "entered", "root", "python", "ready"}

// timeline holds a start's phase stamps (ns of CLOCK_MONOTONIC; 0 when a
// path has no such phase).
type timeline [numPhases]int64

func (t *timeline) mark(phase int) { t[phase] = wire.MonotonicNow() }

// since returns the time from the previous stamped phase to phase.
func (t *timeline) since(phase int) time.Duration {
	if t[phase] == 0 {
		return 0
	}
	for prev := phase - 1; prev >= 0; prev-- {
		if t[prev] != 0 {
			return time.Duration(t[phase] - t[prev])
		}
	}
	return 0
}
