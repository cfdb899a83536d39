//go:build linux && (amd64 || arm64)

package pid1

import "golang.org/x/sys/unix"

// syscallTable is the seccomp allow-list of every run: Python, the
// processes it starts (/bin/bash, coreutils, multiprocessing workers) and
// the sandbox's pid 1 after it installs the filter (Go's runtime, fork and
// exec of Python). It is the one place to review what a run may ask of the
// kernel. A call in no group answers ENOSYS, so that a call a newer kernel
// adds is refused by default and libc falls back to an older one.
//
// The legacy* and arch* names are amd64's older or arch-specific forms of
// the calls beside them (seccomp_linux_amd64.go); arm64 has none of them
// (noSyscall there).
var syscallTable = []syscallGroup{
	{"memory: the allocator, the loader, mmap'd files, shared memory and NUMA hints of numpy and OpenBLAS", sysAllow, []int{
		unix.SYS_BRK, unix.SYS_MMAP, unix.SYS_MUNMAP, unix.SYS_MREMAP, unix.SYS_MPROTECT,
		unix.SYS_MADVISE, unix.SYS_MINCORE, unix.SYS_MSYNC,
		unix.SYS_MLOCK, unix.SYS_MLOCK2, unix.SYS_MUNLOCK,
		unix.SYS_MEMFD_CREATE, unix.SYS_MEMBARRIER,
		unix.SYS_GET_MEMPOLICY, unix.SYS_SET_MEMPOLICY, unix.SYS_MBIND,
	}},
	{"threads: pthreads, futexes, per-thread state and CPU placement (clone is checked below)", sysAllow, []int{
		unix.SYS_FUTEX, unix.SYS_FUTEX_WAITV, unix.SYS_FUTEX_WAKE, unix.SYS_FUTEX_WAIT, unix.SYS_FUTEX_REQUEUE,
		unix.SYS_SET_ROBUST_LIST, unix.SYS_SET_TID_ADDRESS, unix.SYS_RSEQ, unix.SYS_GETTID,
		archPrctl, unix.SYS_EXIT,
		unix.SYS_SCHED_YIELD, unix.SYS_SCHED_GETAFFINITY, unix.SYS_SCHED_SETAFFINITY,
		unix.SYS_SCHED_GETPARAM, unix.SYS_SCHED_GETSCHEDULER,
		unix.SYS_SCHED_GET_PRIORITY_MAX, unix.SYS_SCHED_GET_PRIORITY_MIN, unix.SYS_GETCPU,
	}},
	{"processes: fork, exec and wait (subprocess, multiprocessing, bash) and a process's own attributes and limits", sysAllow, []int{
		legacyFork, legacyVfork, unix.SYS_EXECVE, unix.SYS_EXECVEAT,
		unix.SYS_WAIT4, unix.SYS_WAITID, unix.SYS_EXIT_GROUP, unix.SYS_PIDFD_OPEN,
		unix.SYS_GETPID, unix.SYS_GETPPID, unix.SYS_GETPGID, unix.SYS_SETPGID, legacyGetpgrp,
		unix.SYS_GETSID, unix.SYS_SETSID, unix.SYS_PRCTL,
		unix.SYS_PRLIMIT64, unix.SYS_GETRLIMIT, unix.SYS_SETRLIMIT, unix.SYS_GETRUSAGE,
		unix.SYS_GETPRIORITY, unix.SYS_SETPRIORITY, unix.SYS_UMASK,
	}},
	{"identity: reading ids, and moving among ids and capabilities a process already holds (it holds none to gain more)", sysAllow, []int{
		unix.SYS_GETUID, unix.SYS_GETEUID, unix.SYS_GETGID, unix.SYS_GETEGID,
		unix.SYS_GETRESUID, unix.SYS_GETRESGID, unix.SYS_GETGROUPS,
		unix.SYS_SETUID, unix.SYS_SETGID, unix.SYS_SETREUID, unix.SYS_SETREGID,
		unix.SYS_SETRESUID, unix.SYS_SETRESGID, unix.SYS_SETFSUID, unix.SYS_SETFSGID, unix.SYS_SETGROUPS,
		unix.SYS_CAPGET, unix.SYS_CAPSET,
	}},
	{"signals: handlers, masks, waiting, and signalling the run's own processes (the pid namespace bounds kill)", sysAllow, []int{
		unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_RT_SIGSUSPEND,
		unix.SYS_RT_SIGPENDING, unix.SYS_RT_SIGTIMEDWAIT, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_TGSIGQUEUEINFO,
		unix.SYS_SIGALTSTACK, unix.SYS_RESTART_SYSCALL, legacyPause,
		unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, unix.SYS_PIDFD_SEND_SIGNAL,
	}},
	{"time: clocks, sleeps and timers (time, asyncio, signal.setitimer, timeout(1))", sysAllow, []int{
		unix.SYS_CLOCK_GETTIME, unix.SYS_CLOCK_GETRES, unix.SYS_CLOCK_NANOSLEEP, unix.SYS_NANOSLEEP,
		unix.SYS_GETTIMEOFDAY, legacyTime, unix.SYS_TIMES, legacyAlarm,
		unix.SYS_GETITIMER, unix.SYS_SETITIMER,
		unix.SYS_TIMER_CREATE, unix.SYS_TIMER_SETTIME, unix.SYS_TIMER_GETTIME,
		unix.SYS_TIMER_GETOVERRUN, unix.SYS_TIMER_DELETE,
		unix.SYS_TIMERFD_CREATE, unix.SYS_TIMERFD_SETTIME, unix.SYS_TIMERFD_GETTIME,
	}},
	{"descriptors: open, read, write, pipes, copies and flushes (Landlock and the mount namespace decide which files)", sysAllow, []int{
		unix.SYS_OPENAT, unix.SYS_OPENAT2, legacyOpen, legacyCreat, unix.SYS_CLOSE, unix.SYS_CLOSE_RANGE,
		unix.SYS_READ, unix.SYS_WRITE, unix.SYS_READV, unix.SYS_WRITEV,
		unix.SYS_PREAD64, unix.SYS_PWRITE64, unix.SYS_PREADV, unix.SYS_PWRITEV, unix.SYS_PREADV2, unix.SYS_PWRITEV2,
		unix.SYS_LSEEK, unix.SYS_DUP, legacyDup2, unix.SYS_DUP3, unix.SYS_FCNTL, unix.SYS_FLOCK, unix.SYS_IOCTL,
		legacyPipe, unix.SYS_PIPE2, unix.SYS_SENDFILE, unix.SYS_SPLICE, unix.SYS_TEE, unix.SYS_COPY_FILE_RANGE,
		unix.SYS_FADVISE64, unix.SYS_READAHEAD, unix.SYS_FALLOCATE, unix.SYS_FTRUNCATE, unix.SYS_TRUNCATE,
		unix.SYS_FSYNC, unix.SYS_FDATASYNC, unix.SYS_SYNC, unix.SYS_SYNCFS, unix.SYS_SYNC_FILE_RANGE,
	}},
	{"paths: stat, directories, links, modes, owners, times and extended attributes (ls, cp -a, shutil, tar)", sysAllow, []int{
		unix.SYS_NEWFSTATAT, unix.SYS_FSTAT, legacyStat, legacyLstat, unix.SYS_STATX,
		unix.SYS_STATFS, unix.SYS_FSTATFS, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2, legacyAccess,
		unix.SYS_GETCWD, unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_GETDENTS64, legacyGetdents,
		unix.SYS_READLINKAT, legacyReadlink, unix.SYS_MKDIRAT, legacyMkdir, unix.SYS_MKNODAT, legacyMknod,
		unix.SYS_UNLINKAT, legacyUnlink, legacyRmdir,
		unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2, legacyRename,
		unix.SYS_LINKAT, legacyLink, unix.SYS_SYMLINKAT, legacySymlink,
		unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, legacyChmod,
		unix.SYS_FCHOWN, unix.SYS_FCHOWNAT, legacyChown, legacyLchown,
		unix.SYS_UTIMENSAT, legacyUtimes, legacyUtime, legacyFutimesat,
		unix.SYS_GETXATTR, unix.SYS_LGETXATTR, unix.SYS_FGETXATTR,
		unix.SYS_LISTXATTR, unix.SYS_LLISTXATTR, unix.SYS_FLISTXATTR,
		unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
		unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR,
	}},
	{"waiting on descriptors: select, poll and epoll (selectors, asyncio, subprocess), eventfd and signalfd", sysAllow, []int{
		legacySelect, unix.SYS_PSELECT6, legacyPoll, unix.SYS_PPOLL,
		legacyEpollCreate, unix.SYS_EPOLL_CREATE1, unix.SYS_EPOLL_CTL,
		legacyEpollWait, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2,
		legacyEventfd, unix.SYS_EVENTFD2, legacySignalfd, unix.SYS_SIGNALFD4,
	}},
	{"sockets: using the sockets socket() let through (AF_UNIX; AF_INET to the egress proxy with network)", sysAllow, []int{
		unix.SYS_SOCKETPAIR, unix.SYS_BIND, unix.SYS_LISTEN, unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_CONNECT,
		unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME, unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKOPT,
		unix.SYS_SENDTO, unix.SYS_RECVFROM, unix.SYS_SENDMSG, unix.SYS_RECVMSG,
		unix.SYS_SENDMMSG, unix.SYS_RECVMMSG, unix.SYS_SHUTDOWN,
	}},
	{"file watching: inotify (tail -f, watchdog, development servers), at most a few instances and watches a run, " +
		"in its own user namespace (userlimits)", sysAllow, []int{
		unix.SYS_INOTIFY_INIT1, unix.SYS_INOTIFY_ADD_WATCH, unix.SYS_INOTIFY_RM_WATCH,
	}},
	{"system facts: uname, sysinfo (memory size for sort and numpy) and getrandom (os.urandom, ssl, hash seeds)", sysAllow, []int{
		unix.SYS_UNAME, unix.SYS_SYSINFO, unix.SYS_GETRANDOM,
	}},
	{"clone: threads and fork; namespace flags are refused (EPERM)", sysCheckClone, []int{unix.SYS_CLONE}},
	{"socket: AF_UNIX only, and AF_INET stream sockets with network (EAFNOSUPPORT, EPROTONOSUPPORT)", sysCheckSocket, []int{unix.SYS_SOCKET}},
	{"clone3: its flags sit in memory a filter cannot read; ENOSYS makes libc fall back to clone", sysNosys, []int{unix.SYS_CLONE3}},
	{"refused with EPERM, as before the allow-list: mounts and namespaces, tracing or reading other processes, " +
		"kernel code and BPF, keyrings, io_uring (which bypasses this filter), perf, userfaultfd, clock and host settings", sysRefuse, []int{
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
		unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
		unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR, unix.SYS_OPEN_TREE_ATTR,
		unix.SYS_LISTMOUNT, unix.SYS_STATMOUNT,
		unix.SYS_UNSHARE, unix.SYS_SETNS,
		unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
		unix.SYS_PROCESS_MADVISE, unix.SYS_PIDFD_GETFD, unix.SYS_KCMP,
		unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
		unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
		unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
		unix.SYS_SYSLOG, unix.SYS_PERSONALITY, unix.SYS_VHANGUP,
		unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
		unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
		unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_LOOKUP_DCOOKIE,
		unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_FANOTIFY_INIT,
		unix.SYS_MIGRATE_PAGES, unix.SYS_MOVE_PAGES,
		legacyIopl, legacyIoperm, legacyModifyLDT, legacyUselib, legacyUstat, legacySysfs,
		legacySysctl, unix.SYS_NFSSERVCTL, legacyCreateModule, legacyGetKernelSyms, legacyQueryModule,
	}},
}
