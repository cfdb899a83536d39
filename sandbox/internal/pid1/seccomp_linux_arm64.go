package pid1

import "golang.org/x/sys/unix"

var hostArch = seccompArch{audit: unix.AUDIT_ARCH_AARCH64, table: syscallTable}

// arm64 has only the generic calls: none of amd64's older or
// arch-specific ones in syscallTable exists here.
const (
	archPrctl = noSyscall

	legacyAccess      = noSyscall
	legacyAlarm       = noSyscall
	legacyChmod       = noSyscall
	legacyChown       = noSyscall
	legacyCreat       = noSyscall
	legacyDup2        = noSyscall
	legacyEpollCreate = noSyscall
	legacyEpollWait   = noSyscall
	legacyEventfd     = noSyscall
	legacyFork        = noSyscall
	legacyFutimesat   = noSyscall
	legacyGetdents    = noSyscall
	legacyGetpgrp     = noSyscall
	legacyLchown      = noSyscall
	legacyLink        = noSyscall
	legacyLstat       = noSyscall
	legacyMkdir       = noSyscall
	legacyMknod       = noSyscall
	legacyOpen        = noSyscall
	legacyPause       = noSyscall
	legacyPipe        = noSyscall
	legacyPoll        = noSyscall
	legacyReadlink    = noSyscall
	legacyRename      = noSyscall
	legacyRmdir       = noSyscall
	legacySelect      = noSyscall
	legacySignalfd    = noSyscall
	legacyStat        = noSyscall
	legacySymlink     = noSyscall
	legacyTime        = noSyscall
	legacyUnlink      = noSyscall
	legacyUtime       = noSyscall
	legacyUtimes      = noSyscall
	legacyVfork       = noSyscall

	legacyCreateModule  = noSyscall
	legacyGetKernelSyms = noSyscall
	legacyIoperm        = noSyscall
	legacyIopl          = noSyscall
	legacyModifyLDT     = noSyscall
	legacyQueryModule   = noSyscall
	legacySysctl        = noSyscall
	legacySysfs         = noSyscall
	legacyUselib        = noSyscall
	legacyUstat         = noSyscall
)
