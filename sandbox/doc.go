// Package sandbox runs skill entrypoints and untrusted Python code in
// isolated, resource-limited, single-use sandboxes built from Linux
// namespaces, cgroups, rlimits, Landlock and seccomp.
package sandbox
