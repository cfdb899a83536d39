package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

func TestPreflightMessages(t *testing.T) {
	dir := t.TempDir()
	knob := filepath.Join(dir, "max_user_namespaces")
	require.NoError(t, os.WriteFile(knob, []byte("0\n"), 0o644))
	assert.EqualError(t, checkUserNamespaces(knob), "user namespaces disabled: "+knob+"=0")
	require.NoError(t, os.WriteFile(knob, []byte("96365\n"), 0o644))
	assert.NoError(t, checkUserNamespaces(knob))
	assert.NoError(t, checkUserNamespaces(filepath.Join(dir, "absent")))

	outside := filepath.Join(dir, "python3")
	require.NoError(t, os.WriteFile(outside, []byte("#!/bin/sh\n"), 0o755))
	assert.ErrorContains(t, checkPython(outside), "is outside /usr")
	assert.ErrorContains(t, checkPython(filepath.Join(dir, "nope")), "python interpreter")
	require.NoError(t, os.Chmod(outside, 0o700))
	assert.ErrorContains(t, checkPython(outside), "not a file executable by others")
	if _, err := os.Stat(defaultPython); err == nil {
		assert.NoError(t, checkPython(defaultPython))
	}
}

func TestCheckSearchable(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	assert.ErrorContains(t, checkSearchable(filepath.Join(private, "work")), "not searchable by others")
	open := filepath.Join(dir, "open")
	require.NoError(t, os.Mkdir(open, 0o711))
	for _, d := range []string{dir, filepath.Dir(dir)} { // t.TempDir makes both 0700
		require.NoError(t, os.Chmod(d, 0o711))
	}
	assert.NoError(t, checkSearchable(filepath.Join(open, "work", "deeper")))
}

func TestProbeFactsVerify(t *testing.T) {
	good := probeFacts{
		Status: map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0000000000000000",
			"CapPrm": "0000000000000000", "CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
			"CapInh": "0000000000000000"},
		UID: wire.SandboxUID, PID: 5, Procs: 2, Ifaces: []string{"lo"}, Inet: "Address family not supported by protocol",
		Hostname: wire.Hostname,
	}
	require.NoError(t, good.verify())
	for want, edit := range map[string]func(*probeFacts){
		"no_new_privs":             func(f *probeFacts) { f.Status["NoNewPrivs"] = "0" },
		"seccomp filter":           func(f *probeFacts) { f.Status["Seccomp"] = "0" },
		"has capabilities":         func(f *probeFacts) { f.Status["CapEff"] = "000001ffffffffff" },
		"bounding set":             func(f *probeFacts) { f.Status["CapBnd"] = "000001ffffffffff" },
		"CapInh: 0000000000200100": func(f *probeFacts) { f.Status["CapInh"] = "0000000000200100" },
		"runs as uid 0":            func(f *probeFacts) { f.UID = 0 },
		"pid namespace":            func(f *probeFacts) { f.Procs = 90 },
		"network namespace":        func(f *probeFacts) { f.Ifaces = []string{"eth0", "lo"} },
		"AF_INET":                  func(f *probeFacts) { f.Inet = "allowed" },
		"root is writable":         func(f *probeFacts) { f.RootWritable = true },
		"private UTS namespace":    func(f *probeFacts) { f.Hostname = "vm" },
	} {
		f := good
		f.Status = map[string]string{}
		for k, v := range good.Status {
			f.Status[k] = v
		}
		edit(&f)
		assert.ErrorContains(t, f.verify(), want)
	}
}
