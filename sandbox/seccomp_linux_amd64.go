package sandbox

import "golang.org/x/sys/unix"

var hostArch = seccompArch{
	audit: unix.AUDIT_ARCH_X86_64,
	x32:   true,
	denied: append([]uintptr{
		unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_MODIFY_LDT, unix.SYS_USELIB,
		unix.SYS_USTAT, unix.SYS_SYSFS, unix.SYS__SYSCTL, unix.SYS_NFSSERVCTL,
		unix.SYS_CREATE_MODULE, unix.SYS_GET_KERNEL_SYMS, unix.SYS_QUERY_MODULE,
	}, commonDenied...),
	clone:  unix.SYS_CLONE,
	clone3: unix.SYS_CLONE3,
	socket: unix.SYS_SOCKET,
}
