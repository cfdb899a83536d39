//go:build linux && !amd64 && !arm64

package pid1

// hostArch is empty: InstallSeccomp refuses to run, so isolation fails
// loudly instead of running without a filter.
var hostArch seccompArch
