// Package sandbox runs skill entrypoints and untrusted Python code in
// isolated, resource-limited, single-use sandboxes built from Linux
// namespaces, cgroups, rlimits, Landlock and seccomp.
//
// # Use
//
// Every binary that uses the package calls MaybeInit first thing in main
// (tests: in TestMain): a sandbox's pid 1 is the binary itself, re-executed
// with a private verb. New checks that isolation works on the machine by
// starting one sandbox and inspecting it from the inside, and fails with
// ErrUnsupported and the missing piece otherwise; it never runs code
// unisolated. Runner.Run runs one Job and returns a Result; everything that
// goes wrong inside a run is a failed Result, and Run's only errors are
// ErrOverloaded, ErrClosed and the context's.
//
// # One run
//
// A sandbox is started before it is needed (the warm pool): the gateway
// re-executes itself in new user, mount, pid, network, IPC and UTS
// namespaces, moves it into a fresh cgroup (memory, pids, and cpu where
// the hierarchy has it), and that pid 1
// then enters a new cgroup namespace, builds a private root and starts
// Python as the unprivileged sandbox user. Python imports the runtime and
// blocks on a pipe. A run writes the job (code, args, the list of skills
// and blobs) to that pipe; skills and input blobs are files in the
// sandbox's job directory, bound read-only at /job. The runtime answers
// with one length-prefixed JSON frame on another pipe and exits. The
// gateway then kills pid 1, which makes the kernel kill every process left
// in the sandbox's pid namespace; its cgroup and directories are removed
// before the worker is released. A sandbox never serves a second run.
//
// With Config.Template on (the default auto: when the template passes the
// self-check), the same sandbox is forked instead: one long-lived Python
// per Runner (the template, runtime/_template.py), in a user and a mount
// namespace of its own with the runtime imported, clones each pid 1
// straight into fresh namespaces. pid 1 is moved into the run's cgroup by
// the gateway and forks the job process, then only reaps and reports: each
// page a forked process touches is a copy, so pid 1 touches few. The job
// process enters a new cgroup namespace, binds a read-only tree the
// template built once, adds the run's own /proc, tmpfs and job, pivots
// (pid 1 moves along), drops every privilege, applies the Landlock and
// seccomp rules the gateway computed and waits for its job as a freshly
// started interpreter would. Runs with an Egress always start from
// scratch.
//
// # Inside
//
//	/usr                 host /usr, read-only (and /bin, /lib... as on the host)
//	/etc                 passwd, group, hosts, hostname (generated), ld.so.cache
//	/proc                the sandbox's own pid namespace
//	/dev                 null, zero, full, random, urandom, shm (tmpfs); read-only otherwise
//	/tmp, /workspace     size-limited tmpfs, fresh per run; /workspace is cwd and HOME
//	/job                 read-only: skills/<name>/..., blobs/<n>
//	/opt/skillgate       read-only: the runtime (runtime.blobs, runtime.log)
//
// Python runs as uid 1000 (mapped to Config.UIDBase+1000 on the host in
// root mode, to a subordinate uid or the gateway's own in rootless mode)
// with
// no capabilities (the bounding set included), no-new-privileges, Landlock
// (read-only /usr, /etc, /job, /opt/skillgate, /proc, /dev; read-write
// /tmp, /workspace and /dev/shm; no TCP; signals and abstract sockets scoped) where
// the kernel has it, and a seccomp allow-list (only AF_UNIX sockets). A Job
// with an Egress is the one exception: its sandbox's loopback is up, the
// gateway holds a listener on it, and Python may make IPv4 TCP
// connections to that port only (see Egress). Its environment is PATH,
// HOME, LANG, TMPDIR, PYTHONDONTWRITEBYTECODE and Job.Env, nothing of the
// gateway's. Mounted skills are importable as skills.<name>.
//
// # Root and rootless
//
// Config.Mode picks how the sandbox gets its privileges (ModeAuto: root
// when the gateway is root). Root mode maps a range of 65536 host ids and
// gives every run a cgroup. Rootless mode builds the same sandbox from a
// user namespace an ordinary user may create: the sandbox uid 1000 is a
// uid of the gateway user's subordinate range where newuidmap and
// /etc/subuid provide one (Config.IDMap), else the gateway's own uid (an
// unprivileged process may map only that one by itself), pid 1 keeps the
// capabilities it needs as ambient ones of that namespace and hands none
// to Python, and memory and processes are limited by a delegated cgroup
// where one is writable (Config.CgroupDir, else the gateway's own), else,
// and for a controller that cgroup lacks, by rlimits that pid 1 puts on
// Python (RLIMIT_DATA and RLIMIT_AS, RLIMIT_NPROC counted in the run's own
// user namespace). Runner.Enforcement reports which mechanism enforces
// what.
//
// # Limits
//
// Memory and the number of processes and threads come from the cgroup
// (v1 nested under the gateway's own cgroup, or v2; rlimits in rootless
// mode without a writable one), the CPU share from the cgroup's cpu.max
// (v2) or CFS quota (v1) where Config.CPUs or Job.CPUs asks for one and
// the cpu controller is there, CPU time from
// RLIMIT_CPU (Python is never pid 1, so SIGXCPU works, with a hard limit
// one second later), wall time from a timer started when the job is
// delivered, open files and file size from rlimits, disk from the tmpfs
// sizes (charged to the run's memory), the logs (stdout, stderr and
// runtime.log together) from a hard cap past which the run is killed.
// What the kernel counts per user (inotify, namespaces, queued signals,
// message queue bytes, processes) is counted in a user namespace of the
// run's own, with low limits (see pid1.RunUserLimits), whether it was
// from scratch or from the template.
//
// Config.WorkDir, which holds the runtime every sandbox binds, must be a
// directory of the gateway's user that no one else can change; New
// refuses any other.
//
// # Where the code lives
//
// The code is split along the processes of a run (docs/sandbox.md has
// the full table, and who owns which descriptor, lock and directory):
//
//   - the gateway: this package (the Runner, its pool and templates, a
//     run's plan, the self-check), which alone is imported from outside;
//   - its cgroups: sandbox/internal/cgroup;
//   - pid 1 of a sandbox started from scratch, and the job's set-up either
//     way (mounts, limits, network, Landlock, seccomp):
//     sandbox/internal/pid1, entered through MaybeInit;
//   - what the gateway and pid 1 agree on (the verb, descriptors, config
//     frame, status events, paths inside): sandbox/internal/wire;
//   - the template and the job: the Python runtime under runtime/
//     (_template.py, _boot.py), with their Go side in template_linux.go,
//     templates_linux.go and plan.go.
//
// The pieces import nothing of the gateway side, and nothing outside
// this package imports them.
package sandbox
