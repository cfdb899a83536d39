package pid1

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A template's ruleset handles, at every Landlock ABI, exactly what
// go-landlock's configuration for that ABI handles (what a run started
// from scratch applies), and sizes the ruleset's attributes as that ABI's
// struct landlock_ruleset_attr: 8 bytes, 16 from ABI 4 (network), 24 from
// ABI 6 (scopes).
func TestLandlockSpecFollowsEveryABI(t *testing.T) {
	configs := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
		landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	sys := [3]uint64{unix.SYS_LANDLOCK_CREATE_RULESET, unix.SYS_LANDLOCK_ADD_RULE, unix.SYS_LANDLOCK_RESTRICT_SELF}
	for abi := 1; abi <= len(configs)+1; abi++ {
		t.Run(fmt.Sprint("ABI ", abi), func(t *testing.T) {
			want := configs[min(abi, len(configs))-1] // a newer kernel gets the newest ruleset known
			s := landlockSpecOf(abi, nil)
			assert.Equal(t, abi, s.ABI)
			assert.Equal(t, uint64(want.HandledAccessFS), s.FS, "filesystem rights")
			assert.Equal(t, uint64(want.HandledAccessNet), s.Net, "network rights")
			assert.Equal(t, uint64(want.Scoped), s.Scoped, "scopes")
			attrSize := 8
			switch {
			case abi >= 6:
				attrSize = 24
			case abi >= 4:
				attrSize = 16
			}
			assert.Equal(t, attrSize, s.AttrSize)
			assert.Equal(t, sys, s.Sys)

			read := uint64(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
			assert.Equal(t, read, s.RO, "read-only directories: execute, read files, list")
			assert.Equal(t, s.FS&^(uint64(ll.AccessFSIoctlDev)|1<<16), s.RW, "writable directories: every handled right but device ioctls (ABI 5) and what ABI 9 added")
			assert.Equal(t, uint64(ll.AccessFSExecute|ll.AccessFSWriteFile|ll.AccessFSReadFile)|s.FS&ll.AccessFSTruncate, s.Files,
				"devices: the file rights, truncate where handled")
		})
	}
}

// Without Landlock (an error, or no ABI) a template applies no ruleset.
func TestLandlockSpecWithoutLandlock(t *testing.T) {
	assert.Equal(t, LandlockSpec{}, landlockSpecOf(3, errors.New("landlock: not supported")))
	assert.Equal(t, LandlockSpec{}, landlockSpecOf(0, nil))
	assert.Equal(t, LandlockSpec{}, landlockSpecOf(-1, nil))
}

// TemplateLandlock is this kernel's ABI.
func TestTemplateLandlockIsThisKernels(t *testing.T) {
	abi, err := ll.LandlockGetABIVersion()
	assert.Equal(t, landlockSpecOf(abi, err), TemplateLandlock())
}

// TemplateSeccomp is the filter of runs without network, instruction by
// instruction, as the 8 bytes of a struct sock_filter each (code, jt, jf,
// k) in this machine's byte order: what the template hands to prctl.
func TestTemplateSeccompIsTheFilterWithoutNetwork(t *testing.T) {
	raw, err := hex.DecodeString(TemplateSeccomp())
	require.NoError(t, err)
	want := buildFilter(hostArch, false)
	require.Len(t, raw, 8*len(want))
	for i, ins := range want {
		b := raw[8*i : 8*i+8]
		got := unix.SockFilter{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
		require.Equal(t, ins, got, "instruction %d", i)
	}
	assert.NotEqual(t, want, buildFilter(hostArch, true), "the filter with network differs")
}
