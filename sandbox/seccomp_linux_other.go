//go:build linux && !amd64 && !arm64

package sandbox

// hostArch is empty: installSeccomp refuses to run, so isolation fails
// loudly instead of running without a filter.
var hostArch seccompArch
