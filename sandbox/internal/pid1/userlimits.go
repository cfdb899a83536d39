package pid1

import "fmt"

// The kernel counts some resources per user (its ucounts): inotify
// instances and watches, fanotify groups and marks, namespaces of each
// kind, pending signals, POSIX message queue bytes, processes. It keeps
// these counts per user namespace and uid, and charges each one to every
// ancestor namespace's owner as well, up to the host user that created the
// first namespace: host root in root mode, the gateway's user in rootless
// mode. A run that used up such a count would stop that user's other
// processes (the next gateway's file watchers, other runs) from getting
// any. Every run therefore gets a user namespace of its own whose limits
// are low: from scratch it is pid 1's, made by the clone; from the
// template the job process makes one nested in the template's. The counts
// of its uid there are the run's alone, and what all runs charge to the
// host user is at most the number of runs in flight times these limits.

// userLimit is one of /proc/sys/user/max_*, per uid of a user namespace
// and writable by a process holding CAP_SYS_RESOURCE in it.
type userLimit struct {
	Name  string `json:"name"` // the file under /proc/sys/user
	Value int64  `json:"value"`
}

// RunUserLimits are the counts of a run's uid in its user namespace.
// Namespaces are none: seccomp refuses them already, and a count of 0
// says so to the kernel's accounting too. Fanotify is none: it watches
// other processes' file activity, which a run has no use for. Inotify is
// a handful: file-watching libraries take one instance and a watch per
// directory. Files an older kernel lacks are skipped.
var RunUserLimits = []userLimit{
	{"max_inotify_instances", 8},
	{"max_inotify_watches", 1024},
	{"max_fanotify_groups", 0},
	{"max_fanotify_marks", 0},
	{"max_user_namespaces", 0},
	{"max_mnt_namespaces", 0},
	{"max_pid_namespaces", 0},
	{"max_net_namespaces", 0},
	{"max_ipc_namespaces", 0},
	{"max_uts_namespaces", 0},
	{"max_cgroup_namespaces", 0},
	{"max_time_namespaces", 0},
}

// Rlimits on counts the kernel keeps per uid of a user namespace, set on
// the run's Python in its own namespace. Queued signals: a run needs a few
// at most (a timer, a child's exit); the host default is in the tens of
// thousands. Message queue bytes: one small queue.
const (
	RunSigPending    = 128
	runMsgQueueBytes = 64 << 10
)

// DescribeUserCounts is the "user_counts" line of the enforcement report.
func DescribeUserCounts() string {
	v := map[string]int64{}
	for _, l := range RunUserLimits {
		v[l.Name] = l.Value
	}
	return fmt.Sprintf("per run, in its own user namespace: %d inotify instances and %d watches, %d fanotify groups, "+
		"%d namespaces of each kind, %d pending signals (RLIMIT_SIGPENDING), %d KiB of message queues (RLIMIT_MSGQUEUE)",
		v["max_inotify_instances"], v["max_inotify_watches"], v["max_fanotify_groups"], v["max_user_namespaces"],
		RunSigPending, runMsgQueueBytes>>10)
}
