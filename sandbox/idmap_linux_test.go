package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// forEachIDMap runs an isolation test on the shared Runner and, where that
// maps a subordinate id range, on a Runner mapping the gateway's own uid:
// a rootless gateway may end up with either.
func forEachIDMap(t *testing.T, test func(*testing.T, *Runner)) {
	r := sharedRunner(t)
	t.Run(idMapName(r), func(t *testing.T) { test(t, r) })
	if r.ids.kind == idMapSub {
		own := ownRunner(t, func(c *Config) { c.IDMap = IDMapOwn })
		t.Run(idMapName(own), func(t *testing.T) { test(t, own) })
	}
}

func idMapName(r *Runner) string {
	return map[idMapKind]string{idMapRange: "root range", idMapSub: "subordinate ids", idMapOwnID: "own uid"}[r.ids.kind]
}

// requireSubordinate skips unless this process can map a subordinate
// range; SKILLGATE_REQUIRE_SUBUID=1 (.ci/test-rootless) makes that fail.
func requireSubordinate(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("root mode maps its own range")
	}
	if _, err := subordinateIDMapper(); err != nil {
		if os.Getenv("SKILLGATE_REQUIRE_SUBUID") == "1" {
			t.Fatalf("subordinate ids required: %v", err)
		}
		t.Skipf("no subordinate ids: %v", err)
	}
}

func TestParseIDMap(t *testing.T) {
	for in, want := range map[string]IDMap{"": IDMapAuto, "auto": IDMapAuto, " own": IDMapOwn, "subordinate": IDMapSubordinate} {
		got, err := ParseIDMap(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"sub", "Own", "own,auto", "\x00"} {
		_, err := ParseIDMap(bad)
		assert.ErrorContains(t, err, "not auto, subordinate or own", bad)
	}
	cfg := testConfig()
	cfg.IDMap = "subuid"
	assert.ErrorIs(t, cfg.Validate(), errInvalidConfig)
}

func TestFindSubRange(t *testing.T) {
	text := "# comment\n\nalice:100000:65536\nbad line\nbob:x:5\nbob:-1:5\nbob:7:0\nbob:4294967290:100\n1001:200000:1000\nbob:300000:65536\nalice:900000:10\n"
	for _, c := range []struct {
		name string
		id   int
		want subRange
		ok   bool
	}{
		{"alice", 1000, subRange{100000, 65536}, true},
		{"bob", 1002, subRange{300000, 65536}, true}, // the malformed lines are skipped
		{"carol", 1001, subRange{200000, 1000}, true},
		{"dave", 1003, subRange{}, false},
	} {
		got, ok := findSubRange(text, c.name, c.id)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.want, got, c.name)
	}

	// The highest id a range may reach is 4294967294: 4294967295 is
	// (uid_t)-1, "no id".
	got, ok := findSubRange("erin:4294967195:100\n", "erin", 1004)
	assert.True(t, ok, "a range that ends at the highest id")
	assert.Equal(t, subRange{4294967195, 100}, got)
	_, ok = findSubRange("erin:4294967196:100\n", "erin", 1004)
	assert.False(t, ok, "a range that reaches (uid_t)-1")
	_, ok = findSubRange("erin:4294967295:1\n", "erin", 1004)
	assert.False(t, ok)
}

func TestHostIDOf(t *testing.T) {
	m := "         0        999          1\n         1     100000      65536\n"
	for id, want := range map[int]int{0: 999, 1: 100000, 1000: 100999, 65536: 165535} {
		got, err := hostIDOf(m, id)
		require.NoError(t, err)
		assert.Equal(t, want, got, id)
	}
	_, err := hostIDOf(m, 65537)
	assert.ErrorContains(t, err, "not mapped")
	_, err = hostIDOf("0 x 1\n", 0)
	assert.ErrorContains(t, err, "bad id map line")

	sub := &idMapper{kind: idMapSub, uid: subRange{100000, 65536}, gid: subRange{100000, 65536}}
	require.NoError(t, sub.checkHostUID(100999))
	assert.ErrorContains(t, sub.checkHostUID(999), "is host uid 999, not 100999")
	assert.Contains(t, sub.describeUIDs(), "host uid 100999: subordinate range 100000+65536 via newuidmap")
}

func TestNewIDMapper(t *testing.T) {
	cfg := testConfig()
	m, err := newIDMapper(&cfg, ModeRoot)
	require.NoError(t, err)
	assert.Equal(t, idMapRange, m.kind)
	assert.Equal(t, int(cfg.UIDBase)+wire.SandboxUID, m.hostUID())

	cfg.IDMap = IDMapOwn
	m, err = newIDMapper(&cfg, ModeRootless)
	require.NoError(t, err)
	assert.Equal(t, idMapOwnID, m.kind)
	assert.Equal(t, os.Getuid(), m.hostUID())

	cfg.IDMap = IDMapSubordinate
	m, err = newIDMapper(&cfg, ModeRootless)
	if _, subErr := subordinateIDMapper(); subErr != nil {
		assert.ErrorContains(t, err, "subordinate id range required")
	} else {
		require.NoError(t, err)
		assert.Equal(t, idMapSub, m.kind)
	}
}

// TestSubordinateIDsFromTheHost looks at a run from the host: its Python
// runs as the subordinate uid, the file it writes belongs to that uid, and
// the gateway still collects its output blob.
func TestSubordinateIDsFromTheHost(t *testing.T) {
	requireSubordinate(t)
	r := ownRunner(t, func(c *Config) { c.IDMap = IDMapSubordinate })
	require.Equal(t, idMapSub, r.ids.kind)
	want := r.ids.hostUID()
	assert.Contains(t, r.Enforcement().UIDs, "subordinate range")
	assert.NotEqual(t, os.Getuid(), want)

	code := `
import os, signal, time
from runtime import blobs

done = []

def main(args):
    signal.signal(signal.SIGUSR1, lambda *_: done.append(1))
    with open("/proc/self/uid_map") as f:
        uid_map = f.read()
    with open("/workspace/mine", "w") as f:
        f.write("x")
    blob = blobs.write_text("from the subordinate uid")
    with open("/workspace/ready", "w"):
        pass
    for _ in range(1200):
        if done:
            break
        time.sleep(0.05)
    return {"uid": os.getuid(), "uid_map": uid_map, "blob": blob, "done": done}
`
	type seen struct {
		statusUID int
		fileUID   int
	}
	found := make(chan seen, 1)
	go func() {
		defer close(found)
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			for _, pid := range runnerPythons(r.name) {
				root := filepath.Join("/proc", strconv.Itoa(pid), "root", wire.WorkspacePath)
				if _, err := os.Stat(filepath.Join(root, "ready")); err != nil {
					continue
				}
				status, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
				st, err := os.Stat(filepath.Join(root, "mine"))
				if err != nil {
					continue
				}
				fileUID := int(st.Sys().(*syscall.Stat_t).Uid)
				// The gateway owns the run's user namespace: it may
				// signal the run, though not the other way round.
				_ = syscall.Kill(pid, syscall.SIGUSR1)
				found <- seen{statusUID: realUID(string(status)), fileUID: fileUID}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	res := run(t, r, code, nil, withTimeout(60*time.Second), func(j *Job) { j.OutputBlobIDs = []string{"b1"} })
	requireCompleted(t, res)
	s, ok := <-found
	require.True(t, ok, "the run's Python was not found from the host")
	assert.Equal(t, []any{float64(1)}, output(t, res)["done"], "the host's signal arrived")
	assert.Equal(t, want, s.statusUID, "Python's host uid")
	assert.Equal(t, want, s.fileUID, "owner of a file the run wrote")
	out := output(t, res)
	assert.Equal(t, float64(wire.SandboxUID), out["uid"])
	// From scratch the run's user namespace is a child of the host's; from
	// the template it is a child of the template's, which maps the
	// sandbox uid to itself.
	mapped := want
	if r.UsesTemplate() {
		mapped = wire.SandboxUID
	}
	got, err := hostIDOf(out["uid_map"].(string), wire.SandboxUID)
	require.NoError(t, err)
	assert.Equal(t, mapped, got, "the run's own uid_map")
	require.Len(t, res.OutputBlobs, 1)
	assert.Equal(t, "from the subordinate uid", string(res.OutputBlobs[0].Data))
}

// runnerPythons lists the host pids of the processes the Runner's pid 1s
// started.
func runnerPythons(name string) []int {
	var out []int
	for _, line := range runnerProcesses(name) {
		var pid, init int
		if _, err := fmt.Sscanf(line, "pid %d (sandbox pid 1: %d)", &pid, &init); err == nil && pid != init {
			out = append(out, pid)
		}
	}
	return out
}

// realUID reads the real uid from a /proc/<pid>/status.
func realUID(status string) int {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok && len(strings.Fields(v)) > 0 {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return -1
}

// hostIDOf reads an id's host id from a uid_map or gid_map.
func hostIDOf(idMap string, id int) (int, error) {
	var inside, outside, n int
	for line := range strings.Lines(idMap) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if _, err := fmt.Sscan(line, &inside, &outside, &n); err != nil {
			return 0, fmt.Errorf("bad id map line %q", line)
		}
		if id >= inside && id < inside+n {
			return outside + id - inside, nil
		}
	}
	return 0, errors.New("the sandbox uid is not mapped")
}
