package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/pid1"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// preflight checks what root mode needs that can be checked without
// starting a sandbox, so that the error names the missing piece.
func preflight(cfg *Config) error {
	if err := checkUserNamespaces(maxUserNamespaces); err != nil {
		return err
	}
	if err := checkSeccompSupport(); err != nil {
		return err
	}
	if !pid1.SeccompForThisArch() {
		return errors.New("no seccomp filter for this architecture")
	}
	if err := checkPython(cfg.Python); err != nil {
		return err
	}
	if err := checkSelfExecutable(); err != nil {
		return err
	}
	return checkSearchable(cfg.WorkDir)
}

// checkSelfExecutable requires the gateway binary to be executable by
// others: each sandbox's pid 1 is this binary, started as an unprivileged
// host uid (a binary built under umask 077 is not).
func checkSelfExecutable() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the gateway binary: %w", err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return fmt.Errorf("cannot stat the gateway binary: %w", err)
	}
	if fi.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("the gateway binary %s (mode %v) must be executable by others (chmod o+rx): sandboxes re-execute it as an unprivileged uid", exe, fi.Mode().Perm())
	}
	// /proc/self/exe reaches the file without walking its directories, so
	// only the file's own mode matters.
	return nil
}

// checkSearchable requires every existing ancestor of dir to be searchable
// by others: the sandbox's root, an unprivileged host uid, binds from it.
func checkSearchable(dir string) error {
	for d := filepath.Dir(filepath.Clean(dir)); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil && st.Mode()&0o001 == 0 {
			return fmt.Errorf("work dir %s: %s is not searchable by others (mode %v); the sandbox's uid must traverse it", dir, d, st.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

const maxUserNamespaces = "/proc/sys/user/max_user_namespaces"

// checkUserNamespaces fails when the sysctl at path forbids user
// namespaces (a missing file means the kernel has no such knob).
func checkUserNamespaces(path string) error {
	if n, err := readInt(path); err == nil && n == 0 {
		return fmt.Errorf("user namespaces disabled: %s=0", path)
	}
	return nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

func checkSeccompSupport() error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	if !strings.Contains(string(status), "\nSeccomp:") {
		return errors.New("kernel without seccomp (no Seccomp line in /proc/self/status)")
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); errors.Is(err, unix.EINVAL) {
		return errors.New("kernel without seccomp (PR_GET_SECCOMP: EINVAL)")
	}
	return nil
}

// checkPython requires an executable interpreter under /usr, the only
// host tree visible in the sandbox.
func checkPython(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("python interpreter: %w", err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("python interpreter: %w", err)
	}
	if !st.Mode().IsRegular() || st.Mode()&0o001 == 0 {
		return fmt.Errorf("python interpreter %s is not a file executable by others", real)
	}
	for _, dir := range append([]string{"/usr"}, usrDirs()...) {
		if strings.HasPrefix(real, dir+"/") {
			return nil
		}
	}
	return fmt.Errorf("python interpreter %s (%s) is outside /usr; only /usr is visible in the sandbox", path, real)
}

// usrDirs are the host's /bin, /lib ... that are real directories (a split
// /usr system); the sandbox binds them too.
func usrDirs() []string {
	var out []string
	for _, name := range wire.UsrSiblings {
		if st, err := os.Lstat("/" + name); err == nil && st.Mode()&fs.ModeSymlink == 0 && st.IsDir() {
			out = append(out, "/"+name)
		}
	}
	return out
}

// probeCode reports, from inside a sandbox, what the isolation looks like.
const probeCode = `
import os, socket

def main(args):
    facts = {"status": {}}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            facts["status"][key] = value.strip()
    facts["uid"] = os.getuid()
    facts["pid"] = os.getpid()
    facts["procs"] = len([p for p in os.listdir("/proc") if p.isdigit()])
    with open("/proc/net/dev") as f:
        facts["ifaces"] = sorted(l.split(":")[0].strip() for l in f.readlines()[2:])
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        facts["inet"] = "allowed"
    except OSError as e:
        facts["inet"] = e.strerror
    try:
        open("/rootfile", "w")
        facts["root_writable"] = True
    except OSError:
        facts["root_writable"] = False
    with open("/workspace/probe", "w") as f:
        f.write("ok")
    facts["hostname"] = socket.gethostname()
    return facts
`

// probeFacts are the answers of probeCode that the check looks at.
type probeFacts struct {
	Status       map[string]string `json:"status"` // /proc/self/status
	UID          int               `json:"uid"`
	PID          int               `json:"pid"`
	Procs        int               `json:"procs"`
	Ifaces       []string          `json:"ifaces"`
	Inet         string            `json:"inet"`
	RootWritable bool              `json:"root_writable"`
	Hostname     string            `json:"hostname"`
}

// selfCheck starts one sandbox, runs probeCode in it and checks every
// layer it can see from the inside.
func (r *Runner) selfCheck() error {
	sb, err := r.spawn(false, r.WarmEnvironment())
	if err != nil {
		return err
	}
	defer r.teardown(sb)
	r.landlockABI = sb.landlock
	r.sizePool(sb)
	p, err := newPlan(r.cfg, Job{RunID: "self-check", Code: probeCode, Timeout: spawnTimeout})
	if err != nil {
		return err
	}
	res, err := sb.run(context.Background(), r.closing, p, &r.cfg)
	if err != nil {
		return err
	}
	if res.Status != StatusCompleted {
		return fmt.Errorf("isolation self-check failed: %s: %s\n%s", res.Error.Type, res.Error.Message, res.Logs)
	}
	var facts probeFacts
	if err := json.Unmarshal(res.Output, &facts); err != nil {
		return fmt.Errorf("isolation self-check: %w", err)
	}
	if err := facts.verify(); err != nil {
		return err
	}
	owner, err := probeOwner(sb)
	if err == nil {
		err = r.ids.checkHostUID(owner)
	}
	if err != nil {
		return fmt.Errorf("isolation self-check failed: %w", err)
	}
	return nil
}

// probeOwner is the host uid owning the file probeCode wrote.
func probeOwner(sb *sandbox) (int, error) {
	st, err := sb.ws.Lstat("probe")
	if err != nil {
		return 0, fmt.Errorf("the probe's file: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("the probe's file has no owner")
	}
	return int(sys.Uid), nil
}

func (f *probeFacts) verify() error {
	const noCaps = "0000000000000000"
	st := f.Status
	for _, c := range []struct {
		bad  bool
		what string
	}{
		{st["NoNewPrivs"] != "1", "no_new_privs is not set (NoNewPrivs: " + st["NoNewPrivs"] + ")"},
		{st["Seccomp"] != "2", "the seccomp filter is not active (Seccomp: " + st["Seccomp"] + ")"},
		{st["CapEff"] != noCaps || st["CapPrm"] != noCaps || st["CapAmb"] != noCaps || st["CapInh"] != noCaps,
			"the sandboxed process has capabilities (CapEff: " + st["CapEff"] + ", CapInh: " + st["CapInh"] + ", CapAmb: " + st["CapAmb"] + ")"},
		{st["CapBnd"] != noCaps, "the capability bounding set is not empty (CapBnd: " + st["CapBnd"] + ")"},
		{f.UID != wire.SandboxUID, fmt.Sprintf("code runs as uid %d, not %d", f.UID, wire.SandboxUID)},
		{f.Procs > 2, fmt.Sprintf("no private pid namespace (pid %d, %d processes visible)", f.PID, f.Procs)},
		{len(f.Ifaces) != 1 || f.Ifaces[0] != "lo", fmt.Sprintf("no private network namespace (interfaces %v)", f.Ifaces)},
		{f.Inet == "allowed", "seccomp allows AF_INET sockets"},
		{f.RootWritable, "the sandbox root is writable"},
		{f.Hostname != wire.Hostname, "no private UTS namespace (hostname " + f.Hostname + ")"},
	} {
		if c.bad {
			return fmt.Errorf("isolation self-check failed: %s", c.what)
		}
	}
	return nil
}
