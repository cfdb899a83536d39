package cgroup

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A cgroup v2 host's mountinfo, and a kernel command line without the
// boot option; hybridMounts (cgroup_linux_test.go) is a hybrid host's.
const (
	unifiedMounts = "22 1 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n" +
		"40 1 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	bootLine = "console=ttyS0 reboot=k panic=1 quiet\n"
)

func TestFavorsDynmods(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo, cmdline string
		want                     bool
	}{
		{"hybrid, nothing set", hybridMounts, bootLine, false},
		{"cgroup v2, nothing set", unifiedMounts, bootLine, false},
		{"cgroup2 mount option", "40 1 0:30 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw,nsdelegate,favordynmods\n", bootLine, true},
		{"option on a v1 mount", hybridMounts + "34 25 0:31 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio,favordynmods\n", "", true},
		{"another filesystem's option of that name", "50 1 0:40 / /x rw - tmpfs tmpfs rw,favordynmods\n", bootLine, false},
		{"an option that only starts with it", "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,favordynmodsx\n", bootLine, false},
		{"in the per-mount options only", "40 1 0:30 / /sys/fs/cgroup rw,favordynmods - cgroup2 cgroup2 rw\n", bootLine, false},
		{"boot option true", hybridMounts, "quiet cgroup_favordynmods=true panic=1", true},
		{"boot option 1", hybridMounts, "cgroup_favordynmods=1", true},
		{"boot option Y", hybridMounts, "cgroup_favordynmods=Y", true},
		{"boot option false", hybridMounts, "cgroup_favordynmods=false", false},
		{"boot option 0", hybridMounts, "cgroup_favordynmods=0", false},
		{"boot option empty", hybridMounts, "cgroup_favordynmods=", false},
		{"nothing readable", "", "", false},
	} {
		assert.Equal(t, tc.want, favorsDynmods(tc.mountinfo, tc.cmdline), tc.name)
	}
}

// The advice is given only where it applies: a Runner that moves its
// sandboxes into cgroups, on a host whose moves wait.
func TestCgroupMoveHint(t *testing.T) {
	hint := MoveHint(true, hybridMounts, bootLine)
	assert.Contains(t, hint, "RCU grace period")
	assert.Contains(t, hint, "cgroup_favordynmods=true")
	assert.Contains(t, hint, "docs/operations.md")
	assert.Empty(t, MoveHint(false, hybridMounts, bootLine), "no cgroups: nothing is moved")
	assert.Empty(t, MoveHint(true, hybridMounts, "cgroup_favordynmods=true"))
	assert.Empty(t, MoveHint(true, "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,favordynmods\n", bootLine))
}
