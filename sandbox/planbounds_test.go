package sandbox

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every bound of a job holds exactly, each refusal with its own reason:
// the value at the bound is accepted, one past it refused.
func TestPlanBounds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxOutputBlobs = 2
	manyFiles := func(n int) []File {
		files := make([]File, n)
		for i := range files {
			files[i] = File{Path: fmt.Sprintf("f%d", i)}
		}
		return files
	}
	// 1 GiB of skill files without allocating it: the files share one
	// 64 MiB array.
	chunk := make([]byte, 64<<20)
	gib := func(extra int) []File {
		files := make([]File, 16)
		for i := range files {
			files[i] = File{Path: fmt.Sprintf("big%d", i), Data: chunk}
		}
		return append(files, File{Path: "extra", Data: chunk[:extra]})
	}
	args := func(n int) []byte { // a JSON object of exactly n bytes
		return []byte(`{"a":"` + strings.Repeat("x", n-8) + `"}`)
	}
	for _, c := range []struct {
		name string
		ok   Job
		bad  Job
		why  string
	}{
		{"run id", Job{Code: "x", RunID: strings.Repeat("r", 128)}, Job{Code: "x", RunID: strings.Repeat("r", 129)}, "run id must be at most 128 printable ASCII bytes"},
		{"run id characters", Job{Code: "x", RunID: " ~"}, Job{Code: "x", RunID: "\x7f"}, "printable ASCII"},
		{"run id control", Job{Code: "x", RunID: "a b"}, Job{Code: "x", RunID: "\x1f"}, "printable ASCII"},
		{"timeout", Job{Code: "x", Timeout: 0}, Job{Code: "x", Timeout: -1}, "negative timeout"},
		{"args size", Job{Code: "x", Args: args(16 << 20)}, Job{Code: "x", Args: args(16<<20 + 1)}, "args larger than 16777216 bytes"},
		{"args object", Job{Code: "x", Args: []byte(" \n")}, Job{Code: "x", Args: []byte("[]")}, "args must be a JSON object"},
		{"args JSON", Job{Code: "x", Args: []byte(`{"a":1}`)}, Job{Code: "x", Args: []byte(`{"a":}`)}, "args must be a JSON object"},
		{"language", Job{Code: "x", Language: LanguageBash}, Job{Code: "x", Language: "ruby"}, `language "ruby": want "python" or "bash"`},
		{"bash entry", Job{Code: "x", Language: LanguageBash}, Job{Language: LanguageBash, EntrySkill: "a.b"}, "a bash run has no entry skill"},
		{"outputs", Job{Code: "x", OutputBlobIDs: []string{"a", "b"}}, Job{Code: "x", OutputBlobIDs: []string{"a", "b", "c"}}, "more than 2 output blob ids"},
		{"output id twice", Job{Code: "x", OutputBlobIDs: []string{"a", "b"}}, Job{Code: "x", OutputBlobIDs: []string{"a", "a"}}, "blob id a given twice"},
		{"input and output id", Job{Code: "x", InputBlobs: []InputBlob{{ID: "a"}}, OutputBlobIDs: []string{"b"}},
			Job{Code: "x", InputBlobs: []InputBlob{{ID: "a"}}, OutputBlobIDs: []string{"a"}}, "blob id a given twice"},
		{"input id twice", Job{Code: "x", InputBlobs: []InputBlob{{ID: "a"}, {ID: "b"}}}, Job{Code: "x", InputBlobs: []InputBlob{{ID: "a"}, {ID: "a"}}}, "blob id a given twice"},
		{"skill files", Job{Code: "x", Skills: []Skill{{Name: "a", Files: manyFiles(20000)}}},
			Job{Code: "x", Skills: []Skill{{Name: "a", Files: manyFiles(20001)}}}, "skills hold more than 20000 files or 1073741824 bytes"},
		{"skill bytes", Job{Code: "x", Skills: []Skill{{Name: "a", Files: gib(0)}}},
			Job{Code: "x", Skills: []Skill{{Name: "a", Files: gib(1)}}}, "skills hold more than 20000 files or 1073741824 bytes"},
		{"skill twice", Job{Code: "x", Skills: []Skill{{Name: "a"}, {Name: "b"}}}, Job{Code: "x", Skills: []Skill{{Name: "a"}, {Name: "a"}}}, "skill a mounted twice"},
		{"file clash", Job{Code: "x", Skills: []Skill{{Name: "a", Files: []File{{Path: "m"}, {Path: "m-x/y"}, {Path: "mx"}}}}},
			Job{Code: "x", Skills: []Skill{{Name: "a", Files: []File{{Path: "m"}, {Path: "m/y"}}}}}, `skill a: file "m" clashes with "m/y"`},
		{"file twice", Job{Code: "x", Skills: []Skill{{Name: "a", Files: []File{{Path: "m"}, {Path: "n"}}}}},
			Job{Code: "x", Skills: []Skill{{Name: "a", Files: []File{{Path: "m"}, {Path: "m"}}}}}, `skill a: file "m" clashes with "m"`},
		{"entry skill", Job{EntrySkill: "a", EntryModule: "m.py", Skills: []Skill{{Name: "a", Files: []File{{Path: "m.py"}}}}},
			Job{EntrySkill: "b", EntryModule: "m.py", Skills: []Skill{{Name: "a", Files: []File{{Path: "m.py"}}}}}, "entry skill b is not among the mounted skills"},
		{"entry module", Job{EntrySkill: "a", EntryModule: "m.py", Skills: []Skill{{Name: "a", Files: []File{{Path: "m.py"}}}}},
			Job{EntrySkill: "a", EntryModule: "n.py", Skills: []Skill{{Name: "a", Files: []File{{Path: "m.py"}}}}}, "entry module n.py is not a file of skill a"},
		{"entry module path", Job{EntrySkill: "a", EntryModule: "m.py", Skills: []Skill{{Name: "a", Files: []File{{Path: "m.py"}}}}},
			Job{EntrySkill: "a", EntryModule: "m.txt", Skills: []Skill{{Name: "a", Files: []File{{Path: "m.txt"}}}}}, "entry module: module \"m.txt\" is not a .py file"},
		{"entrypoint", Job{Code: "x", Entrypoint: "run"}, Job{Code: "x", Entrypoint: "class"}, `entrypoint: "class" is a Python keyword`},
	} {
		_, err := newPlan(cfg, c.ok)
		assert.NoError(t, err, "%s at its bound", c.name)
		_, err = newPlan(cfg, c.bad)
		assert.ErrorIs(t, err, errInvalidJob, c.name)
		assert.ErrorContains(t, err, c.why, c.name)
	}
}

// A run's CPU budget is the configured CPU time, else its timeout, in
// whole seconds rounded up.
func TestPlanCPUSeconds(t *testing.T) {
	assert.Equal(t, int64(2), cpuSeconds(0, 1500*time.Millisecond))
	assert.Equal(t, int64(1), cpuSeconds(time.Nanosecond, time.Hour))
	assert.Equal(t, int64(30), cpuSeconds(-time.Second, 30*time.Second))
	assert.Equal(t, int64(3), cpuSeconds(3*time.Second, time.Hour))
	p, err := newPlan(DefaultConfig(), Job{Code: "x"})
	require.NoError(t, err)
	assert.Equal(t, int64(16<<20), p.msg.MaxBlobBytes)
}
