package pid1

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// evalBPF runs a seccomp program over a seccomp_data built from arch, nr
// and args: just the instructions buildFilter emits.
func evalBPF(t *testing.T, prog []unix.SockFilter, arch uint32, nr int, arg0 uint64, more ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[seccompOffNr:], uint32(nr))
	binary.LittleEndian.PutUint32(data[seccompOffArch:], arch)
	binary.LittleEndian.PutUint64(data[seccompOffArgs0:], arg0)
	for i, a := range more {
		binary.LittleEndian.PutUint64(data[seccompOffArgs1+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case bpfLoad:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case bpfJEQ, bpfJGE, bpfJSET:
			var cond bool
			switch in.Code {
			case bpfJEQ:
				cond = acc == in.K
			case bpfJGE:
				cond = acc >= in.K
			default:
				cond = acc&in.K != 0
			}
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfJA:
			pc += int(in.K)
		case bpfAnd:
			acc &= in.K
		case bpfRet:
			return in.K
		default:
			t.Fatalf("unexpected instruction %#x", in.Code)
		}
	}
	t.Fatal("program fell off the end")
	return 0
}

func TestSeccompFilter(t *testing.T) {
	if hostArch.audit == 0 {
		t.Skip("no filter for this architecture")
	}
	prog := buildFilter(hostArch, false)
	require.Less(t, len(prog), 4096, "BPF program size limit")
	eperm, enosys, eafno := retErrno(unix.EPERM), retErrno(unix.ENOSYS), retErrno(unix.EAFNOSUPPORT)
	for _, tc := range []struct {
		name string
		nr   int
		arg0 uint64
		want uint32
	}{
		{"read", unix.SYS_READ, 0, retAllow},
		{"openat", unix.SYS_OPENAT, 0, retAllow},
		{"futex", unix.SYS_FUTEX, 0, retAllow},
		{"sched_getaffinity", unix.SYS_SCHED_GETAFFINITY, 0, retAllow},
		{"getrandom", unix.SYS_GETRANDOM, 0, retAllow},
		{"epoll_pwait", unix.SYS_EPOLL_PWAIT, 0, retAllow},
		{"mount", unix.SYS_MOUNT, 0, eperm},
		{"unshare", unix.SYS_UNSHARE, 0, eperm},
		{"ptrace", unix.SYS_PTRACE, 0, eperm},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, 0, eperm},
		{"bpf", unix.SYS_BPF, 0, eperm},
		{"clone3", unix.SYS_CLONE3, 0, enosys},
		{"fork-like clone", unix.SYS_CLONE, uint64(unix.SIGCHLD), retAllow},
		{"thread clone", unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, retAllow},
		{"clone newuser", unix.SYS_CLONE, unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), eperm},
		{"clone newns high bits set", unix.SYS_CLONE, 1<<40 | unix.CLONE_NEWNS, eperm},
		{"socket unix", unix.SYS_SOCKET, unix.AF_UNIX, retAllow},
		{"socket inet", unix.SYS_SOCKET, unix.AF_INET, eafno},
		{"socket netlink", unix.SYS_SOCKET, unix.AF_NETLINK, eafno},
		// Calls the deny-list let through and no run needs: unlisted now.
		{"inotify_init1", unix.SYS_INOTIFY_INIT1, 0, retAllow}, // bounded per run by its user namespace
		{"io_setup", unix.SYS_IO_SETUP, 0, enosys},
		{"vmsplice", unix.SYS_VMSPLICE, 0, enosys},
		{"shmget", unix.SYS_SHMGET, 0, enosys},
		{"landlock_create_ruleset", unix.SYS_LANDLOCK_CREATE_RULESET, 0, enosys},
		{"listns", unix.SYS_LISTNS, 0, enosys},
		{"a future call", 1000, 0, enosys},
		{"the highest number", 1<<32 - 1, 0, enosys},
	} {
		assert.Equal(t, tc.want, evalBPF(t, prog, hostArch.audit, tc.nr, tc.arg0), tc.name)
	}
	assert.Equal(t, uint32(retKill), evalBPF(t, prog, 0x40000003, unix.SYS_READ, 0), "foreign architecture")
	if hostArch.audit == unix.AUDIT_ARCH_X86_64 {
		for _, nr := range []int{unix.SYS_READ, unix.SYS_MOUNT, unix.SYS_CLONE, unix.SYS_SOCKET} {
			assert.Equal(t, enosys, evalBPF(t, prog, hostArch.audit, 0x40000000|nr, 0), "x32 ABI %d", nr)
		}
	}
}

// TestSeccompFilterFollowsTable checks the binary search against the table
// for every number up to well past the last call and for samples of the
// rest: the action of its group, ENOSYS for a number in none.
func TestSeccompFilterFollowsTable(t *testing.T) {
	if hostArch.audit == 0 {
		t.Skip("no filter for this architecture")
	}
	want := map[uint32]sysAction{}
	for _, g := range hostArch.table {
		for _, nr := range g.calls {
			if nr != noSyscall {
				want[uint32(nr)] = g.action
			}
		}
	}
	for _, network := range []bool{false, true} {
		prog := buildFilter(hostArch, network)
		require.Less(t, len(prog), 4096, "BPF program size limit")
		nrs := []uint32{1<<30 - 1, 1 << 30, 1<<31 - 1, 1 << 31, 1<<32 - 2, 1<<32 - 1}
		for nr := range uint32(2048) {
			nrs = append(nrs, nr)
		}
		for _, nr := range nrs {
			var expect uint32
			switch want[nr] {
			case sysAllow, sysCheckClone: // clone with no flags
				expect = retAllow
			case sysRefuse:
				expect = retErrno(unix.EPERM)
			case sysCheckSocket: // socket(AF_UNSPEC)
				expect = retErrno(unix.EAFNOSUPPORT)
			default:
				expect = retErrno(unix.ENOSYS)
			}
			if got := evalBPF(t, prog, hostArch.audit, int(nr), 0); got != expect {
				t.Errorf("network %v: call %d: got %#x, want %#x", network, nr, got, expect)
			}
		}
	}
}

func TestSeccompFilterNetwork(t *testing.T) {
	if hostArch.audit == 0 {
		t.Skip("no filter for this architecture")
	}
	prog := buildFilter(hostArch, true)
	eafno, eproto := retErrno(unix.EAFNOSUPPORT), retErrno(unix.EPROTONOSUPPORT)
	for _, tc := range []struct {
		name     string
		fam, typ uint64
		want     uint32
	}{
		{"unix", unix.AF_UNIX, unix.SOCK_STREAM, retAllow},
		{"tcp", unix.AF_INET, unix.SOCK_STREAM, retAllow},
		{"tcp nonblock cloexec", unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, retAllow},
		{"udp", unix.AF_INET, unix.SOCK_DGRAM, eproto},
		{"raw", unix.AF_INET, unix.SOCK_RAW, eproto},
		{"tcp6", unix.AF_INET6, unix.SOCK_STREAM, eafno},
		{"netlink", unix.AF_NETLINK, unix.SOCK_RAW, eafno},
		{"packet", unix.AF_PACKET, unix.SOCK_RAW, eafno},
	} {
		assert.Equal(t, tc.want, evalBPF(t, prog, hostArch.audit, unix.SYS_SOCKET, tc.fam, tc.typ), tc.name)
	}
	assert.Equal(t, uint32(retAllow), evalBPF(t, prog, hostArch.audit, unix.SYS_READ, 0), "read")
	assert.Equal(t, retErrno(unix.EPERM), evalBPF(t, prog, hostArch.audit, unix.SYS_UNSHARE, 0), "unshare")
}

// The filter's ranges are as few as the table allows, which keeps the
// search short on every system call: each range starts past the one
// before, neighbours differ in action, and only a checked call (its code
// reads that call's arguments) is a range of its own beside an equal one.
func TestCallRangesAreMinimal(t *testing.T) {
	table := []syscallGroup{
		{why: "allowed", action: sysAllow, calls: []int{1, 2, noSyscall}},
		{why: "refused", action: sysRefuse, calls: []int{3}},
		{why: "clone", action: sysCheckClone, calls: []int{5, 6}},
		{why: "last", action: sysAllow, calls: []int{1<<32 - 1}},
	}
	assert.Equal(t, []callRange{
		{0, sysNosys}, {1, sysAllow}, {3, sysRefuse}, {4, sysNosys},
		{5, sysCheckClone}, {6, sysCheckClone}, {7, sysNosys}, {1<<32 - 1, sysAllow},
	}, callRanges(table))
	assert.Equal(t, []callRange{{0, sysAllow}, {1, sysNosys}}, callRanges([]syscallGroup{{action: sysAllow, calls: []int{0}}}))
	// A table ending one below the highest number leaves that number a
	// range of its own: unknown, ENOSYS.
	assert.Equal(t, []callRange{{0, sysNosys}, {1<<32 - 2, sysAllow}, {1<<32 - 1, sysNosys}},
		callRanges([]syscallGroup{{action: sysAllow, calls: []int{1<<32 - 2}}}))

	if hostArch.audit == 0 {
		return
	}
	ranges := callRanges(hostArch.table)
	require.NotEmpty(t, ranges)
	assert.Zero(t, ranges[0].first)
	for i := 1; i < len(ranges); i++ {
		assert.Greater(t, ranges[i].first, ranges[i-1].first, "range %d", i)
		if act := ranges[i].action; act == ranges[i-1].action {
			assert.Contains(t, []sysAction{sysCheckClone, sysCheckSocket}, act, "ranges %d and %d could be one", i-1, i)
		}
	}
}

// A conditional jump reaches 255 instructions: a lower half of exactly
// 255 is skipped by one conditional jump, one of 256 by a conditional and
// an unconditional one; both lead every number to its range's action.
func TestSearchTreeLongJumps(t *testing.T) {
	for _, size := range []int{1, 254, 255, 256, 300} {
		leaf := func(act sysAction) []unix.SockFilter {
			if act == sysAllow { // the lower half: size instructions, the last returns
				code := make([]unix.SockFilter, size)
				for i := range code[:size-1] {
					code[i] = bpfStmt(bpfAnd, 0xffffffff)
				}
				code[size-1] = bpfStmt(bpfRet, retAllow)
				return code
			}
			return []unix.SockFilter{bpfStmt(bpfRet, retErrno(unix.ENOSYS))}
		}
		tree := searchTree([]callRange{{0, sysAllow}, {10, sysNosys}}, leaf)
		jumps := 1
		if size > 255 {
			jumps = 2
		}
		assert.Len(t, tree, jumps+size+1, "a lower half of %d", size)
		prog := append([]unix.SockFilter{bpfStmt(bpfLoad, seccompOffNr)}, tree...)
		for _, nr := range []int{0, 9} {
			assert.Equal(t, uint32(retAllow), evalBPF(t, prog, 0, nr, 0), "%d below, size %d", nr, size)
		}
		for _, nr := range []int{10, 1000} {
			assert.Equal(t, retErrno(unix.ENOSYS), evalBPF(t, prog, 0, nr, 0), "%d above, size %d", nr, size)
		}
	}
}
