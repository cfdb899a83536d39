package pid1

import (
	"encoding/binary"
	"encoding/hex"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// LandlockSpec is the Landlock ruleset a template's job process applies:
// what restrictLandlock asks go-landlock for (V11, best effort), reduced to
// what this kernel's ABI handles.
type LandlockSpec struct {
	ABI      int       `json:"abi"`
	AttrSize int       `json:"attr_size"` // of struct landlock_ruleset_attr at this ABI
	FS       uint64    `json:"fs"`        // handled filesystem rights
	Net      uint64    `json:"net"`       // handled network rights: all denied
	Scoped   uint64    `json:"scoped"`    // abstract unix sockets and signals
	RO       uint64    `json:"ro"`        // read-only directories
	RW       uint64    `json:"rw"`        // /workspace, /tmp, /dev/shm (with REFER: renames between them)
	Files    uint64    `json:"files"`     // the devices
	Sys      [3]uint64 `json:"sys"`       // create_ruleset, add_rule, restrict_self
}

const (
	llRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	llWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate
	llFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile
)

// landlockSpecOf mirrors go-landlock's table of what each ABI handles.
func landlockSpecOf(abi int, err error) LandlockSpec {
	// err is LandlockGetABIVersion's: without Landlock there is no ruleset.
	if err != nil || abi <= 0 {
		return LandlockSpec{}
	}
	s := LandlockSpec{ABI: abi, AttrSize: 8, Sys: [3]uint64{unix.SYS_LANDLOCK_CREATE_RULESET,
		unix.SYS_LANDLOCK_ADD_RULE, unix.SYS_LANDLOCK_RESTRICT_SELF}}
	switch {
	case abi >= 9:
		s.FS = 1<<17 - 1
	case abi >= 5:
		s.FS = 1<<16 - 1
	case abi >= 3:
		s.FS = 1<<15 - 1
	case abi == 2:
		s.FS = 1<<14 - 1
	default:
		s.FS = 1<<13 - 1
	}
	switch {
	case abi >= 10:
		s.Net, s.AttrSize = 1<<4-1, 16
	case abi >= 4:
		s.Net, s.AttrSize = 1<<2-1, 16
	}
	if abi >= 6 {
		s.Scoped, s.AttrSize = 1<<2-1, 24
	}
	s.RO = llRead & s.FS
	s.RW = (llRead | llWrite | ll.AccessFSRefer) & s.FS
	s.Files = (llRead | llWrite) & llFile & s.FS
	return s
}

// TemplateSeccomp is the filter of runs without network as the bytes of a
// struct sock_filter array, for prctl(PR_SET_SECCOMP) in the template.
func TemplateSeccomp() string {
	f := buildFilter(hostArch, false)
	buf := make([]byte, 0, 8*len(f))
	for _, ins := range f {
		buf = binary.NativeEndian.AppendUint16(buf, ins.Code)
		buf = append(buf, ins.Jt, ins.Jf)
		buf = binary.NativeEndian.AppendUint32(buf, ins.K)
	}
	return hex.EncodeToString(buf)
}

// TemplateLandlock is the ruleset for this kernel's Landlock ABI.
func TemplateLandlock() LandlockSpec {
	return landlockSpecOf(ll.LandlockGetABIVersion())
}
