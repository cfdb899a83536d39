package pid1

import (
	"fmt"
	"runtime"
	"slices"
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
// reachable through clone3 and unshare, both refused.
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// sysAction is what the filter does with the calls of a syscallGroup.
type sysAction uint8

const (
	sysNosys       sysAction = iota // ENOSYS: every call in no group
	sysAllow                        // allowed whatever the arguments
	sysRefuse                       // EPERM
	sysCheckClone                   // allowed without namespace flags, else EPERM
	sysCheckSocket                  // allowed for the families of socketRules
)

// syscallGroup is one purpose's calls in the allow-list, with the reason
// they are there.
type syscallGroup struct {
	why    string
	action sysAction
	calls  []int // noSyscall where the architecture lacks a call
}

// noSyscall stands in the table for a call this architecture does not have.
const noSyscall = -1

// seccompArch is what the filter is built from for one architecture.
type seccompArch struct {
	audit uint32
	table []syscallGroup
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
	bpfJA   = unix.BPF_JMP | unix.BPF_JA
	bpfRet  = unix.BPF_RET | unix.BPF_K
	bpfAnd  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
)

// buildFilter returns the allow-list program: foreign architectures
// (including amd64's x32 numbers, which no group lists) are killed or
// answered ENOSYS, and each call gets its group's action from a binary
// search over the call numbers, so that a call costs about ten
// comparisons, not one per listed call. With network, socket also lets
// AF_INET stream sockets through: the namespace only has loopback, and
// Landlock narrows connections to the egress port.
func buildFilter(a seccompArch, network bool) []unix.SockFilter {
	f := []unix.SockFilter{
		bpfStmt(bpfLoad, seccompOffArch),
		bpfJump(bpfJEQ, a.audit, 1, 0),
		bpfStmt(bpfRet, retKill),
		bpfStmt(bpfLoad, seccompOffNr),
	}
	return append(f, searchTree(callRanges(a.table), func(act sysAction) []unix.SockFilter {
		return actionCode(act, network)
	})...)
}

// callRange is a run of consecutive call numbers from first on that share
// one action; the next range begins where it ends.
type callRange struct {
	first  uint32
	action sysAction
}

// callRanges turns the table into ranges covering every 32-bit number, in
// order from 0. A checked call is a range of its own: its code reads the
// arguments of that one call.
func callRanges(table []syscallGroup) []callRange {
	actions := map[uint32]sysAction{}
	for _, g := range table {
		for _, nr := range g.calls {
			if nr != noSyscall {
				actions[uint32(nr)] = g.action
			}
		}
	}
	nrs := make([]uint32, 0, len(actions))
	for nr := range actions {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	var ranges []callRange
	add := func(first uint64, act sysAction) {
		checked := act == sysCheckClone || act == sysCheckSocket
		if n := len(ranges); n > 0 && ranges[n-1].action == act && !checked {
			return
		}
		ranges = append(ranges, callRange{uint32(first), act})
	}
	next := uint64(0) // the first number no range covers yet
	for _, nr := range nrs {
		if uint64(nr) > next {
			add(next, sysNosys)
		}
		add(uint64(nr), actions[nr])
		next = uint64(nr) + 1
	}
	if next <= 1<<32-1 {
		add(next, sysNosys)
	}
	return ranges
}

// searchTree emits a binary search over ranges for the call number in the
// accumulator; each leaf is its range's action code.
func searchTree(ranges []callRange, leaf func(sysAction) []unix.SockFilter) []unix.SockFilter {
	if len(ranges) == 1 {
		return leaf(ranges[0].action)
	}
	mid := len(ranges) / 2
	below := searchTree(ranges[:mid], leaf)
	above := searchTree(ranges[mid:], leaf)
	// A conditional jump reaches 255 instructions; past that it falls
	// through to an unconditional one.
	if len(below) <= 255 {
		return slices.Concat([]unix.SockFilter{bpfJump(bpfJGE, ranges[mid].first, uint8(len(below)), 0)}, below, above)
	}
	return slices.Concat([]unix.SockFilter{
		bpfJump(bpfJGE, ranges[mid].first, 0, 1),
		bpfStmt(bpfJA, uint32(len(below))),
	}, below, above)
}

// actionCode is the code of a leaf: a return, or the argument checks of
// clone and socket.
func actionCode(act sysAction, network bool) []unix.SockFilter {
	switch act {
	case sysAllow:
		return []unix.SockFilter{bpfStmt(bpfRet, retAllow)}
	case sysRefuse:
		return []unix.SockFilter{bpfStmt(bpfRet, retErrno(unix.EPERM))}
	case sysCheckClone:
		// Namespace flags sit in the low word of args[0].
		return []unix.SockFilter{
			bpfStmt(bpfLoad, seccompOffArgs0),
			bpfJump(bpfJSET, cloneNewFlags, 0, 1),
			bpfStmt(bpfRet, retErrno(unix.EPERM)),
			bpfStmt(bpfRet, retAllow),
		}
	case sysCheckSocket:
		return socketRules(network)
	}
	return []unix.SockFilter{bpfStmt(bpfRet, retErrno(unix.ENOSYS))}
}

// socketRules allows AF_UNIX sockets and, with network, AF_INET
// SOCK_STREAM ones: no UDP, no raw sockets, no IPv6, no netlink.
func socketRules(network bool) []unix.SockFilter {
	if !network {
		return []unix.SockFilter{
			bpfStmt(bpfLoad, seccompOffArgs0),
			bpfJump(bpfJEQ, unix.AF_UNIX, 0, 1),
			bpfStmt(bpfRet, retAllow),
			bpfStmt(bpfRet, retErrno(unix.EAFNOSUPPORT)),
		}
	}
	return []unix.SockFilter{
		bpfStmt(bpfLoad, seccompOffArgs0),
		bpfJump(bpfJEQ, unix.AF_UNIX, 0, 1),
		bpfStmt(bpfRet, retAllow),
		bpfJump(bpfJEQ, unix.AF_INET, 0, 5),
		// The type's low bits; SOCK_NONBLOCK and SOCK_CLOEXEC are masked.
		bpfStmt(bpfLoad, seccompOffArgs1),
		bpfStmt(bpfAnd, 0xf),
		bpfJump(bpfJEQ, unix.SOCK_STREAM, 0, 1),
		bpfStmt(bpfRet, retAllow),
		bpfStmt(bpfRet, retErrno(unix.EPROTONOSUPPORT)),
		bpfStmt(bpfRet, retErrno(unix.EAFNOSUPPORT)),
	}
}

// InstallSeccomp loads the filter on the calling thread only (the caller
// holds it locked and forks Python from it). It sets no-new-privileges,
// which the kernel requires of an unprivileged filter.
func InstallSeccomp(network bool) error {
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

// SeccompForThisArch reports whether the filter knows this architecture's
// system calls: without it New refuses to start.
func SeccompForThisArch() bool { return hostArch.audit != 0 }
