package pid1

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// userLimitsDir holds the per-user-namespace limits, as the writer's own
// user namespace has them.
const userLimitsDir = "/proc/sys/user/"

// setUserLimits writes RunUserLimits into the calling process's user
// namespace, which must be the run's own (pid 1's, from scratch). It needs
// CAP_SYS_RESOURCE there, and runs after pid 1 made its last namespace.
func setUserLimits() error {
	for _, l := range RunUserLimits {
		err := os.WriteFile(userLimitsDir+l.Name, []byte(strconv.FormatInt(l.Value, 10)), 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("limit %s: %w", l.Name, err)
		}
	}
	return nil
}

// CountedRlimits are the rlimits on what the kernel counts per uid of a
// user namespace, in the run's own.
var CountedRlimits = [][2]uint64{
	{unix.RLIMIT_SIGPENDING, RunSigPending},
	{unix.RLIMIT_MSGQUEUE, runMsgQueueBytes},
}
