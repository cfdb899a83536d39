//go:build linux && (amd64 || arm64)

package pid1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// TestSeccompTable keeps the table reviewable: every group says why, no
// call is in two groups, and the calls the deny-list refused are refused
// with EPERM still.
func TestSeccompTable(t *testing.T) {
	if hostArch.audit == 0 {
		t.Skip("no filter for this architecture")
	}
	seen := map[int]string{}
	allowed := 0
	for _, g := range hostArch.table {
		assert.NotEmpty(t, g.why)
		assert.NotEmpty(t, g.calls, g.why)
		for _, nr := range g.calls {
			if nr == noSyscall {
				continue
			}
			if prev, dup := seen[nr]; dup {
				t.Errorf("call %d is in %q and %q", nr, prev, g.why)
			}
			seen[nr] = g.why
			if g.action == sysAllow {
				allowed++
			}
		}
	}
	t.Logf("%d calls allowed, %d listed, in %d groups", allowed, len(seen), len(hostArch.table))
	refused := []int{
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
		unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR,
		unix.SYS_OPEN_TREE_ATTR, unix.SYS_LISTMOUNT, unix.SYS_STATMOUNT, unix.SYS_UNSHARE, unix.SYS_SETNS,
		unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PROCESS_MADVISE,
		unix.SYS_PIDFD_GETFD, unix.SYS_KCMP, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER,
		unix.SYS_IO_URING_REGISTER, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE,
		unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
		unix.SYS_ACCT, unix.SYS_SYSLOG, unix.SYS_PERSONALITY, unix.SYS_VHANGUP, unix.SYS_SETTIMEOFDAY,
		unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX, unix.SYS_SETHOSTNAME,
		unix.SYS_SETDOMAINNAME, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_LOOKUP_DCOOKIE,
		unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_FANOTIFY_INIT, unix.SYS_MIGRATE_PAGES,
		unix.SYS_MOVE_PAGES, unix.SYS_NFSSERVCTL,
		legacyIopl, legacyIoperm, legacyModifyLDT, legacyUselib, legacyUstat, legacySysfs, legacySysctl,
		legacyCreateModule, legacyGetKernelSyms, legacyQueryModule,
	}
	prog := buildFilter(hostArch, false)
	for _, nr := range refused {
		if nr != noSyscall {
			assert.Equal(t, retErrno(unix.EPERM), evalBPF(t, prog, hostArch.audit, nr, 0), "refused %d", nr)
		}
	}
}
