package sandbox

import "golang.org/x/sys/unix"

var hostArch = seccompArch{
	audit:  unix.AUDIT_ARCH_AARCH64,
	denied: append([]uintptr{unix.SYS_NFSSERVCTL}, commonDenied...),
	clone:  unix.SYS_CLONE,
	clone3: unix.SYS_CLONE3,
	socket: unix.SYS_SOCKET,
}
