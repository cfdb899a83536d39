package pyenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/metrics"
)

// maxPipOutput is how much of pip's output is kept: its reason for a
// failure is in the last lines.
const maxPipOutput = 64 << 10

// maxLoggedOutput is how much of it a log line carries.
const maxLoggedOutput = 4 << 10

// lastBytes is the end of s, at most n bytes, cut at a line start when
// there is one.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// install runs pip into a fresh temporary directory and renames the result
// into place, read-only. Only a complete environment ever has its key's
// name.
func (b *Builder) install(key string, reqs []Requirement) (*Env, error) {
	start := time.Now()
	env, err := b.installOnce(key, reqs)
	if m := b.cfg.Metrics; m != nil {
		result := metrics.EnvBuildOK
		if err != nil {
			result = metrics.EnvBuildFailed
		}
		m.EnvBuilds.WithLabelValues(result).Inc()
		m.EnvBuildDuration.Observe(time.Since(start).Seconds())
	}
	log := b.cfg.Logger.With().Str("environment", key).Dur("took", time.Since(start)).Logger()
	var be *BuildError
	switch {
	case errors.As(err, &be):
		log.Warn().Str("reason", be.Reason).Str("pip_output", lastBytes(be.Output, maxLoggedOutput)).Msg("python environment build failed")
	case err != nil:
		log.Warn().Err(err).Msg("python environment build failed")
	default:
		log.Info().Int("distributions", len(env.Installed)).Msg("python environment built")
	}
	return env, err
}

func (b *Builder) installOnce(key string, reqs []Requirement) (*Env, error) {
	work, err := os.MkdirTemp(b.root, ".build-"+key+"-")
	if err != nil {
		return nil, fmt.Errorf("python environment: %w", err)
	}
	defer func() { _ = removeTree(work) }()
	target := filepath.Join(work, "target")
	for _, d := range []string{target, filepath.Join(work, "home"), filepath.Join(work, "tmp")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("python environment: %w", err)
		}
	}
	reqFile := filepath.Join(work, "requirements.txt")
	if err := os.WriteFile(reqFile, RequirementsFile(reqs), 0o644); err != nil {
		return nil, fmt.Errorf("python environment: %w", err)
	}
	if err := b.pip(key, work, target, reqFile, reqs); err != nil {
		return nil, err
	}
	if err := makeReadOnly(target); err != nil {
		return nil, fmt.Errorf("python environment: %w", err)
	}
	dir := filepath.Join(b.root, key)
	if err := os.Rename(target, dir); err != nil {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("python environment: %w", err)
		}
		// Another gateway on this data dir built it meanwhile: same key,
		// same content.
	}
	_ = os.Chmod(dir, 0o555)
	return &Env{Key: key, Dir: dir, Installed: ReadInstalled(dir)}, nil
}

// pipArgs is the pip command line: isolated from the user's and the
// host's pip configuration, wheels only, and no source but the configured
// ones.
func (b *Builder) pipArgs(target, reqFile string, reqs []Requirement) []string {
	args := []string{"-I", "-m", "pip", "install",
		"--isolated", "--no-input", "--disable-pip-version-check", "--no-cache-dir",
		"--progress-bar", "off", "--root-user-action", "ignore", "--no-warn-script-location",
		"--only-binary", ":all:", "--target", target}
	if b.cfg.IndexURL == "" {
		args = append(args, "--no-index")
	} else {
		args = append(args, "--index-url", b.cfg.IndexURL)
	}
	for _, f := range b.cfg.FindLinks {
		args = append(args, "--find-links", f)
	}
	if hasHashes(reqs) {
		args = append(args, "--require-hashes")
	}
	return append(args, "-r", reqFile)
}

// pip runs pip under a shell that sets its memory limit first (Go cannot
// set a child's rlimits before exec), in a process group of its own that
// the timeout kills whole.
func (b *Builder) pip(key, work, target, reqFile string, reqs []Requirement) error {
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.Timeout)
	defer cancel()
	kb := strconv.FormatInt(max(b.cfg.MemoryBytes/1024, 1), 10)
	argv := append([]string{"-c", `ulimit -v "$1" && shift && exec "$@"`, "sh", kb, b.cfg.Python}, b.pipArgs(target, reqFile, reqs)...)
	cmd := exec.CommandContext(ctx, "/bin/sh", argv...)
	cmd.Dir = work
	cmd.Env = cleanEnv(work)
	out := &tailBuffer{max: maxPipOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	be := &BuildError{Key: key, Output: out.String()}
	switch {
	case b.ctx.Err() != nil:
		return ErrClosed
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		be.Reason = fmt.Sprintf("pip did not finish within %s", b.cfg.Timeout)
	default:
		be.Reason = pipReason(be.Output, err)
		if strings.Contains(be.Output, "MemoryError") || isKilled(err) {
			be.Reason += fmt.Sprintf(" (pip may have hit its memory limit of %d bytes)", b.cfg.MemoryBytes)
		}
		if hint := b.sdistHint(reqs); hint != "" {
			be.Reason += "; " + hint
		}
	}
	return be
}

func isKilled(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true
		}
	}
	return false
}

// cleanEnv is the whole environment of pip and the interpreter probe:
// nothing of the gateway's (no PIP_*, no proxies, no PYTHON* settings).
func cleanEnv(work string) []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "PYTHONNOUSERSITE=1"}
	if work != "" {
		env = append(env, "HOME="+filepath.Join(work, "home"), "TMPDIR="+filepath.Join(work, "tmp"))
	}
	return env
}

// pipReason picks pip's ERROR lines: its reason, without the noise.
func pipReason(output string, err error) string {
	var reasons []string
	for line := range strings.SplitSeq(output, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "ERROR: "); ok {
			reasons = append(reasons, strings.TrimSpace(r))
		}
	}
	if len(reasons) > 0 {
		return clipReason(strings.Join(reasons, " "))
	}
	lines := strings.Split(strings.TrimSpace(output), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return clipReason(fmt.Sprintf("pip failed (%v): %s", err, last))
	}
	return fmt.Sprintf("pip failed: %v", err)
}

func clipReason(s string) string {
	const n = 2048
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sdistHint names the requirements that a local wheelhouse offers only as
// source distributions, which pip's "no matching distribution" does not
// say.
func (b *Builder) sdistHint(reqs []Requirement) string {
	var hints []string
	for _, r := range reqs {
		sdist, wheel := "", false
		for _, dir := range b.cfg.FindLinks {
			if isURL(dir) {
				continue
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				name, kind := distFile(e.Name())
				if NormalizeName(name) != r.Key() {
					continue
				}
				if kind == "wheel" {
					wheel = true
				} else if kind == "sdist" && sdist == "" {
					sdist = e.Name()
				}
			}
		}
		if sdist != "" && !wheel {
			hints = append(hints, fmt.Sprintf("%s is offered only as a source distribution (%s) and environments are built from wheels only "+
				"(building would run its code): build the wheel on a trusted machine with pip wheel and add it to the wheelhouse", r.Key(), sdist))
		}
	}
	return strings.Join(hints, "; ")
}

// distFile splits a wheelhouse file name into the distribution name and
// its kind ("wheel", "sdist" or "").
func distFile(file string) (string, string) {
	if base, ok := strings.CutSuffix(file, ".whl"); ok {
		name, _, _ := strings.Cut(base, "-")
		return name, "wheel"
	}
	for _, ext := range []string{".tar.gz", ".zip", ".tar.bz2", ".tgz"} {
		if base, ok := strings.CutSuffix(file, ext); ok {
			if i := strings.LastIndexByte(base, '-'); i > 0 {
				return base[:i], "sdist"
			}
		}
	}
	return "", ""
}

// makeReadOnly drops every write bit under dir (its own mode is set once
// it is in place: moving a directory needs write access to it).
func makeReadOnly(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, fi.Mode().Perm()&^0o222)
	})
}

// removeTree removes a read-only tree: directories regain their write bit
// on the way down, the top one first.
func removeTree(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.ToValidUTF8(t.buf.String(), "") }
