package pid1

import "golang.org/x/sys/unix"

var hostArch = seccompArch{audit: unix.AUDIT_ARCH_X86_64, table: syscallTable}

// amd64's older and arch-specific calls in syscallTable. Those allowed are
// what glibc, Go's runtime and older binaries still call instead of the
// *at, 2 and p forms; those refused are obsolete or touch the hardware.
const (
	archPrctl = unix.SYS_ARCH_PRCTL

	legacyAccess      = unix.SYS_ACCESS
	legacyAlarm       = unix.SYS_ALARM
	legacyChmod       = unix.SYS_CHMOD
	legacyChown       = unix.SYS_CHOWN
	legacyCreat       = unix.SYS_CREAT
	legacyDup2        = unix.SYS_DUP2
	legacyEpollCreate = unix.SYS_EPOLL_CREATE
	legacyEpollWait   = unix.SYS_EPOLL_WAIT
	legacyEventfd     = unix.SYS_EVENTFD
	legacyFork        = unix.SYS_FORK
	legacyFutimesat   = unix.SYS_FUTIMESAT
	legacyGetdents    = unix.SYS_GETDENTS
	legacyGetpgrp     = unix.SYS_GETPGRP
	legacyLchown      = unix.SYS_LCHOWN
	legacyLink        = unix.SYS_LINK
	legacyLstat       = unix.SYS_LSTAT
	legacyMkdir       = unix.SYS_MKDIR
	legacyMknod       = unix.SYS_MKNOD
	legacyOpen        = unix.SYS_OPEN
	legacyPause       = unix.SYS_PAUSE
	legacyPipe        = unix.SYS_PIPE
	legacyPoll        = unix.SYS_POLL
	legacyReadlink    = unix.SYS_READLINK
	legacyRename      = unix.SYS_RENAME
	legacyRmdir       = unix.SYS_RMDIR
	legacySelect      = unix.SYS_SELECT
	legacySignalfd    = unix.SYS_SIGNALFD
	legacyStat        = unix.SYS_STAT
	legacySymlink     = unix.SYS_SYMLINK
	legacyTime        = unix.SYS_TIME
	legacyUnlink      = unix.SYS_UNLINK
	legacyUtime       = unix.SYS_UTIME
	legacyUtimes      = unix.SYS_UTIMES
	legacyVfork       = unix.SYS_VFORK

	legacyCreateModule  = unix.SYS_CREATE_MODULE
	legacyGetKernelSyms = unix.SYS_GET_KERNEL_SYMS
	legacyIoperm        = unix.SYS_IOPERM
	legacyIopl          = unix.SYS_IOPL
	legacyModifyLDT     = unix.SYS_MODIFY_LDT
	legacyQueryModule   = unix.SYS_QUERY_MODULE
	legacySysctl        = unix.SYS__SYSCTL
	legacySysfs         = unix.SYS_SYSFS
	legacyUselib        = unix.SYS_USELIB
	legacyUstat         = unix.SYS_USTAT
)
