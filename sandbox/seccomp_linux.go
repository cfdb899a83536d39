package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets in struct seccomp_data (little-endian: the low word of args[0]).
const (
	seccompOffNr    = 0
	seccompOffArch  = 4
	seccompOffArgs0 = 16
	seccompOffArgs1 = 24
)

// cloneNewFlags are the namespace flags clone(2) must not carry.
// CLONE_NEWTIME (0x80) overlaps the exit signal byte of clone(2) and is only
// reachable through clone3 and unshare, both denied.
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// commonDenied are syscalls no run needs that widen the kernel surface:
// mounts and namespaces, tracing other processes, loading kernel code or
// BPF, keyrings, io_uring (which bypasses this filter), perf, userfaultfd,
// clock and host settings.
var commonDenied = []uintptr{
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
}

// seccompArch describes the architecture the filter is built for.
type seccompArch struct {
	audit  uint32
	x32    bool // amd64: deny the x32 ABI (syscall numbers with bit 30)
	denied []uintptr
	clone  uintptr
	clone3 uintptr
	socket uintptr
}

// Seccomp return values.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

func bpfStmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

const (
	bpfLoad = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJEQ  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJGE  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJSET = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfRet  = unix.BPF_RET | unix.BPF_K
)

// buildFilter returns the deny-list program: foreign architectures are
// killed, listed syscalls fail with EPERM, clone3 with ENOSYS (so libc
// falls back to clone, which is checked), clone with namespace flags with
// EPERM, socket families other than AF_UNIX with EAFNOSUPPORT (with
// network, AF_INET stream sockets are allowed too: the namespace only has
// loopback, and Landlock narrows connections to the egress port);
// everything else is allowed.
func buildFilter(a seccompArch, network bool) []unix.SockFilter {
	f := []unix.SockFilter{
		bpfStmt(bpfLoad, seccompOffArch),
		bpfJump(bpfJEQ, a.audit, 1, 0),
		bpfStmt(bpfRet, retKill),
		bpfStmt(bpfLoad, seccompOffNr),
	}
	if a.x32 {
		f = append(f, bpfJump(bpfJGE, 0x40000000, 0, 1), bpfStmt(bpfRet, retErrno(unix.ENOSYS)))
	}
	for _, nr := range a.denied {
		f = append(f, bpfJump(bpfJEQ, uint32(nr), 0, 1), bpfStmt(bpfRet, retErrno(unix.EPERM)))
	}
	f = append(f,
		bpfJump(bpfJEQ, uint32(a.clone3), 0, 1),
		bpfStmt(bpfRet, retErrno(unix.ENOSYS)),
		// clone: namespace flags in the low word of args[0].
		bpfJump(bpfJEQ, uint32(a.clone), 0, 4),
		bpfStmt(bpfLoad, seccompOffArgs0),
		bpfJump(bpfJSET, cloneNewFlags, 0, 1),
		bpfStmt(bpfRet, retErrno(unix.EPERM)),
		bpfStmt(bpfRet, retAllow),
	)
	if network {
		return append(f, socketRulesNetwork(a)...)
	}
	return append(f,
		// socket: only AF_UNIX.
		bpfJump(bpfJEQ, uint32(a.socket), 0, 4),
		bpfStmt(bpfLoad, seccompOffArgs0),
		bpfJump(bpfJEQ, unix.AF_UNIX, 0, 1),
		bpfStmt(bpfRet, retAllow),
		bpfStmt(bpfRet, retErrno(unix.EAFNOSUPPORT)),
		bpfStmt(bpfRet, retAllow),
	)
}

// socketRulesNetwork allows AF_UNIX and AF_INET SOCK_STREAM sockets: no
// UDP, no raw sockets, no IPv6, no netlink.
func socketRulesNetwork(a seccompArch) []unix.SockFilter {
	return []unix.SockFilter{
		bpfJump(bpfJEQ, uint32(a.socket), 0, 10),
		bpfStmt(bpfLoad, seccompOffArgs0),
		bpfJump(bpfJEQ, unix.AF_UNIX, 0, 1),
		bpfStmt(bpfRet, retAllow),
		bpfJump(bpfJEQ, unix.AF_INET, 0, 5),
		// The type's low bits; SOCK_NONBLOCK and SOCK_CLOEXEC are masked.
		bpfStmt(bpfLoad, seccompOffArgs1),
		bpfStmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf),
		bpfJump(bpfJEQ, unix.SOCK_STREAM, 0, 1),
		bpfStmt(bpfRet, retAllow),
		bpfStmt(bpfRet, retErrno(unix.EPROTONOSUPPORT)),
		bpfStmt(bpfRet, retErrno(unix.EAFNOSUPPORT)),
		bpfStmt(bpfRet, retAllow),
	}
}

// installSeccomp loads the filter on the calling thread only (the caller
// holds it locked and forks Python from it). It sets no-new-privileges,
// which the kernel requires of an unprivileged filter.
func installSeccomp(network bool) error {
	if hostArch.audit == 0 {
		return fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	filter := buildFilter(hostArch, network)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
	runtime.KeepAlive(filter)
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
