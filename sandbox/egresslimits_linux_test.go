package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const limitsProbe = `
import os, resource
def main(args):
    out = {}
    for name in ("NOFILE", "FSIZE", "CORE", "CPU", "SIGPENDING", "MSGQUEUE", "NPROC", "DATA", "AS"):
        out[name] = list(resource.getrlimit(getattr(resource, "RLIMIT_" + name)))
    d = "/proc/sys/user"
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            out[name] = f.read().strip()
    return out
`

// A run with network has every limit a run without one has: the rlimits
// pid 1 sets and the per-user-namespace limits it writes. Network changes
// what the run can reach, nothing else.
func TestEgressRunsKeepTheLimits(t *testing.T) {
	r := sharedRunner(t)
	without := output(t, run(t, r, limitsProbe, nil))
	with := output(t, run(t, r, limitsProbe, nil, func(j *Job) { j.Egress = egressFor(t, nil, nil, []string{"*"}, nil) }))
	assert.Equal(t, without, with)
	assert.Equal(t, "0", with["max_user_namespaces"], "no namespaces of its own")
	assert.Equal(t, []any{0.0, 0.0}, with["CORE"], "no core dumps")
}
