package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// How a sandbox's user namespace maps ids, one of three ways.
type idMapKind int

const (
	// idMapRange (root mode): the kernel writes 0..65535 -> UIDBase..
	// at clone.
	idMapRange idMapKind = iota
	// idMapSub (rootless): after the clone newuidmap and newgidmap write
	// 0 -> the gateway's own ids and 1.. -> its subordinate range.
	idMapSub
	// idMapOwnID (rootless): the kernel writes the one map an
	// unprivileged process may write, sandbox uid -> the gateway's own.
	idMapOwnID
)

// idMapper writes the uid and gid maps of a sandbox's pid 1. Starting
// pid 1 takes two calls: cloneAttr for the clone, then writeMaps with its
// pid before pid 1 is sent its configuration (pid 1 waits for that
// configuration before it does anything that depends on its ids).
type idMapper struct {
	kind     idMapKind
	uid, gid subRange // host ids of the range (not used by idMapOwnID)
	// newuidmap and newgidmap (idMapSub).
	uidTool, gidTool string
	// why says, for idMapOwnID, why no subordinate range is used.
	why string
}

// subMapSize bounds how many subordinate ids a sandbox maps (1..65536
// inside), as many as root mode's range.
const subMapSize = uidMapSize

// toolsDirs are where newuidmap and newgidmap are looked for besides
// $PATH (a service's PATH may lack /usr/bin).
var toolsDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}

// newIDMapper picks how the sandboxes of a Runner in mode map their ids.
func newIDMapper(cfg *Config, mode Mode) (*idMapper, error) {
	if mode == ModeRoot {
		r := subRange{start: cfg.UIDBase, count: uidMapSize}
		return &idMapper{kind: idMapRange, uid: r, gid: r}, nil
	}
	if cfg.IDMap == IDMapOwn {
		return ownIDMapper("turned off by configuration"), nil
	}
	m, err := subordinateIDMapper()
	switch {
	case err == nil:
		return m, nil
	case cfg.IDMap == IDMapSubordinate:
		return nil, fmt.Errorf("subordinate id range required: %w", err)
	}
	return ownIDMapper(err.Error()), nil
}

func ownIDMapper(why string) *idMapper { return &idMapper{kind: idMapOwnID, why: why} }

// subordinateIDMapper finds the gateway user's ranges and the setuid tools
// that map them, as shadow's newuidmap will check them.
func subordinateIDMapper() (*idMapper, error) {
	uid, gid := os.Getuid(), os.Getgid()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, fmt.Errorf("no user entry for uid %d: %w", uid, err)
	}
	if u.Gid != strconv.Itoa(gid) {
		return nil, fmt.Errorf("newgidmap maps ids only for a process running with its user's primary group (%s), not gid %d", u.Gid, gid)
	}
	m := &idMapper{kind: idMapSub}
	for _, s := range []struct {
		file, tool string
		r          *subRange
		path       *string
	}{
		{"/etc/subuid", "newuidmap", &m.uid, &m.uidTool},
		{"/etc/subgid", "newgidmap", &m.gid, &m.gidTool},
	} {
		data, err := os.ReadFile(s.file)
		if err != nil {
			return nil, fmt.Errorf("no %s: %w", s.file, err)
		}
		r, ok := findSubRange(string(data), u.Username, uid)
		switch {
		case !ok:
			return nil, fmt.Errorf("no range for user %s in %s", u.Username, s.file)
		case r.count <= wire.SandboxUID:
			return nil, fmt.Errorf("the range %d+%d of user %s in %s has fewer than %d ids", r.start, r.count, u.Username, s.file, wire.SandboxUID+1)
		}
		r.count = min(r.count, subMapSize)
		*s.r = r
		if *s.path, err = findTool(s.tool); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func findTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range toolsDirs {
		p := d + "/" + name
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s (Debian and Ubuntu package uidmap)", name)
}

// subCaps are what a pid 1 with a subordinate range needs on top of
// initCaps: Python's uid is not its own, so starting Python (setuid,
// setgid, setgroups) takes them (initCaps' CAP_SYS_RESOURCE sets Python's
// rlimits with prlimit).
var subCaps = []uintptr{unix.CAP_SETUID, unix.CAP_SETGID}

// cloneAttr returns how to clone pid 1. For idMapSub it has no maps: they
// are written by writeMaps, from outside, once pid 1 exists.
func (m *idMapper) cloneAttr() *syscall.SysProcAttr {
	switch m.kind {
	case idMapOwnID:
		return rootlessAttr()
	case idMapSub:
		return &syscall.SysProcAttr{
			Cloneflags:  cloneFlags,
			AmbientCaps: append(append([]uintptr(nil), initCaps...), subCaps...),
			Pdeathsig:   syscall.SIGKILL,
			Setsid:      true,
		}
	}
	idMap := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(m.uid.start), Size: int(m.uid.count)}}
	return &syscall.SysProcAttr{
		Cloneflags:                 cloneFlags,
		UidMappings:                idMap,
		GidMappings:                idMap,
		GidMappingsEnableSetgroups: true,
		// Without it root is unmapped inside and execve drops every
		// capability pid 1 needs to build the root.
		Credential: &syscall.Credential{Uid: 0, Gid: 0},
		Pdeathsig:  syscall.SIGKILL,
		Setsid:     true,
	}
}

// writeMaps writes the maps the clone could not: with idMapSub, newuidmap
// and newgidmap map 0 to the gateway's own ids (pid 1 keeps reaching the
// gateway's work directory) and 1.. to the subordinate range.
func (m *idMapper) writeMaps(pid int) error {
	if m.kind != idMapSub {
		return nil
	}
	p := strconv.Itoa(pid)
	for _, s := range []struct {
		tool string
		own  int
		r    subRange
	}{{m.uidTool, os.Getuid(), m.uid}, {m.gidTool, os.Getgid(), m.gid}} {
		args := []string{p, "0", strconv.Itoa(s.own), "1", "1", fmt.Sprint(s.r.start), fmt.Sprint(s.r.count)}
		out, err := exec.Command(s.tool, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %v: %w: %s", s.tool, args, err, firstLine(string(out)))
		}
	}
	return nil
}

// hostUID is the host uid the sandboxed code runs as.
func (m *idMapper) hostUID() int {
	switch m.kind {
	case idMapSub:
		return int(m.uid.start) + wire.SandboxUID - 1
	case idMapOwnID:
		return os.Getuid()
	}
	return int(m.uid.start) + wire.SandboxUID
}

// describeUIDs is the "uids" line of the enforcement report.
func (m *idMapper) describeUIDs() string {
	switch m.kind {
	case idMapSub:
		return fmt.Sprintf("sandbox uid %d = host uid %d: subordinate range %d+%d via newuidmap (gids %d+%d via newgidmap)",
			wire.SandboxUID, m.hostUID(), m.uid.start, m.uid.count, m.gid.start, m.gid.count)
	case idMapOwnID:
		return fmt.Sprintf("sandbox uid %d = host uid %d: the gateway's own uid (the mount namespace and Landlock keep runs out of its files)",
			wire.SandboxUID, m.hostUID())
	}
	return fmt.Sprintf("sandbox uid %d = host uid %d (range %d-%d)", wire.SandboxUID, m.hostUID(),
		m.uid.start, uint64(m.uid.start)+uint64(m.uid.count)-1)
}

// checkHostUID compares the host uid that owns a file the sandboxed code
// wrote with what this mapper promised. (The run's own uid_map cannot
// tell: a template's run sees its map relative to the template's user
// namespace.)
func (m *idMapper) checkHostUID(got int) error {
	if got != m.hostUID() {
		return fmt.Errorf("the sandbox uid %d is host uid %d, not %d", wire.SandboxUID, got, m.hostUID())
	}
	return nil
}
