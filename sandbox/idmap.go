package sandbox

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// IDMap says which host ids a rootless sandbox's user namespace maps.
type IDMap string

// ID maps. Root mode always maps its own range (Config.UIDBase) and
// ignores them.
const (
	// IDMapAuto uses a subordinate range when one can be mapped, else
	// the gateway's own uid.
	IDMapAuto IDMap = "auto"
	// IDMapSubordinate requires the gateway user's range from /etc/subuid
	// and /etc/subgid, mapped with newuidmap and newgidmap: the run's uid
	// is a host uid of that range, not the gateway's.
	IDMapSubordinate IDMap = "subordinate"
	// IDMapOwn maps the gateway's own uid only (what an unprivileged
	// process may do by itself).
	IDMapOwn IDMap = "own"
)

// ParseIDMap parses "auto", "subordinate" or "own"; "" means auto.
func ParseIDMap(s string) (IDMap, error) {
	switch m := IDMap(strings.TrimSpace(s)); m {
	case "", IDMapAuto:
		return IDMapAuto, nil
	case IDMapSubordinate, IDMapOwn:
		return m, nil
	}
	return "", fmt.Errorf("%w: id map %q is not auto, subordinate or own", errInvalidConfig, s)
}

// subRange is one line of /etc/subuid or /etc/subgid.
type subRange struct {
	start, count uint32
}

// findSubRange returns the first range of the user called name (or with
// the numeric id) in a subuid/subgid file, as shadow's tools read it.
func findSubRange(text, name string, id int) (subRange, bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ":")
		if len(fields) != 3 || (fields[0] != name && fields[0] != strconv.Itoa(id)) {
			continue
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 || start+count > 1<<32-1 {
			continue
		}
		return subRange{start: uint32(start), count: uint32(count)}, true
	}
	return subRange{}, false
}
