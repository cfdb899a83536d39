package sandbox

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/skills"
)

// loadSkill loads testdata/skills/<name> as the gateway does: the
// registry reads and validates the package, and the Skill handed to the
// sandbox carries its manifest's entrypoint and export (as dispatch's
// sandboxSkill does), so that the runs see what production runs see.
func loadSkill(t testing.TB, name string) Skill {
	t.Helper()
	testSkills.once.Do(func() {
		testSkills.reg, testSkills.err = skills.NewRegistry(skills.Options{Dir: filepath.Join("testdata", "skills")})
	})
	require.NoError(t, testSkills.err)
	sk, err := testSkills.reg.Catalog().Resolve(name, "")
	require.NoError(t, err)
	s := Skill{Name: sk.Manifest.Name}
	if rt := sk.Manifest.Runtime; rt != nil {
		s.Entrypoint, s.Export = rt.Entrypoint, rt.Export
	}
	for _, f := range sk.FileData() {
		s.Files = append(s.Files, File{Path: f.Path, Data: f.Data})
	}
	return s
}

// testSkills is the registry of testdata/skills, loaded once.
var testSkills struct {
	once sync.Once
	reg  *skills.Registry
	err  error
}

func TestRunCodeArgsAndOutput(t *testing.T) {
	r := sharedRunner(t)
	for _, tc := range []struct {
		name, code string
		args       any
		want       string
	}{
		{"dict", "def main(args):\n    return {'sum': args['a'] + args['b']}\n", map[string]int{"a": 2, "b": 40}, `{"sum":42}`},
		{"echo args", "def main(args):\n    return args\n", map[string]any{"s": "é✓", "l": []int{1, 2}}, `{"l":[1,2],"s":"é✓"}`},
		{"no args", "def main(args):\n    return len(args)\n", nil, `0`},
		{"none", "def main(args):\n    pass\n", nil, `null`},
		{"list", "def main(args):\n    return [1, 'two', 3.5, None, True]\n", nil, `[1,"two",3.5,null,true]`},
		{"string", "def main(args):\n    return 'héllo'\n", nil, `"héllo"`},
		{"exactly 4096 bytes", "def main(args):\n    return 'x' * 4094\n", nil, `"` + strings.Repeat("x", 4094) + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, r, tc.code, tc.args)
			requireCompleted(t, res)
			assert.JSONEq(t, tc.want, string(res.Output))
			assert.Positive(t, res.Duration)
		})
	}
}

func TestRunCodeEntrypoints(t *testing.T) {
	r := sharedRunner(t)
	code := "import asyncio\n\ndef handler(args):\n    return 'sync'\n\nasync def co(args):\n    await asyncio.sleep(0)\n    return 'async'\n"
	for _, tc := range []struct{ entry, want string }{{"handler", `"sync"`}, {"co", `"async"`}} {
		res := run(t, r, code, nil, func(j *Job) { j.Entrypoint = tc.entry })
		requireCompleted(t, res)
		assert.JSONEq(t, tc.want, string(res.Output))
	}
}

func TestRunCodeProcessesAndThreads(t *testing.T) {
	r := sharedRunner(t)
	code := `
import concurrent.futures, multiprocessing, subprocess

def square(x):
    return x * x

def main(args):
    with multiprocessing.Pool(2) as pool:
        procs = pool.map(square, range(5))
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        threads = list(ex.map(square, range(5)))
    echo = subprocess.run(["/bin/echo", "hi"], capture_output=True, text=True).stdout
    return {"procs": procs, "threads": threads, "echo": echo}
`
	out := output(t, run(t, r, code, nil))
	assert.Equal(t, map[string]any{"procs": []any{0.0, 1.0, 4.0, 9.0, 16.0},
		"threads": []any{0.0, 1.0, 4.0, 9.0, 16.0}, "echo": "hi\n"}, out)
}

func TestExecuteSkill(t *testing.T) {
	r := sharedRunner(t)
	for _, tc := range []struct {
		name, skill, module, export string
		args                        string
		want                        string
	}{
		{"relative import", "acme.math.add", "code/main.py", "main", `{"a":1,"b":2}`, `{"sum":3}`},
		{"prefix skill", "acme.math", "code/ops.py", "double", `{"x":21}`, `{"double":42}`},
		{"nested package and resources", "acme.text.echo", "code/lib/echo.py", "run", `{"text":"hi"}`, `{"text":"echo:hi"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := Job{
				RunID: tc.name, EntrySkill: tc.skill, EntryModule: tc.module, Entrypoint: tc.export,
				Args:   json.RawMessage(tc.args),
				Skills: []Skill{loadSkill(t, "acme.math.add"), loadSkill(t, "acme.math"), loadSkill(t, "acme.text.echo")},
			}
			res, err := r.Run(t.Context(), job)
			require.NoError(t, err)
			requireCompleted(t, res)
			assert.JSONEq(t, tc.want, string(res.Output))
		})
	}
	res, err := r.Run(t.Context(), Job{EntrySkill: "acme.math.add", EntryModule: "code/main.py", Entrypoint: "main",
		Args: json.RawMessage(`{"a":1,"b":2}`), Skills: []Skill{loadSkill(t, "acme.math.add")}})
	require.NoError(t, err)
	requireCompleted(t, res)
	assert.Contains(t, res.Logs, "[info] adding 1 and 2", "runtime.log lines are in the logs")
}

func TestRunCodeImportsMountedSkills(t *testing.T) {
	r := sharedRunner(t)
	code := `
import importlib
from skills.acme.math.add import main as add
from skills.acme.math import double
import skills.acme.math.add.code.util as util
from runtime import blobs, log

def importable(name):
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False

def main(args):
    import skills.acme.math as m
    return {
        "add": add({"a": 2, "b": 3})["sum"],
        "double": double({"x": 4})["double"],
        "util": util.add(5, 6),
        "nested_wins": not hasattr(importlib.import_module("skills.acme.math.add"), "DECOY")
            and not importable("skills.acme.math.add.decoy"),
        "outer_folder": importable("skills.acme.math.code.ops"),
        "not_mounted": importable("skills.acme.text.echo"),
        "unknown": importable("skills.os") or importable("skills.acme.nothing"),
        "prefix_only_empty": [n for n in dir(importlib.import_module("skills.acme")) if not n.startswith("__")],
    }
`
	res := run(t, r, code, nil, func(j *Job) {
		j.Skills = []Skill{loadSkill(t, "acme.math.add"), loadSkill(t, "acme.math")}
	})
	out := output(t, res)
	assert.Equal(t, map[string]any{
		"add": 5.0, "double": 8.0, "util": 11.0, "nested_wins": true, "outer_folder": true,
		"not_mounted": false, "unknown": false, "prefix_only_empty": []any{"math"},
	}, out)
}

func TestMountedSkillsAreReadOnly(t *testing.T) {
	r := sharedRunner(t)
	code := `
import skills.acme.math.add as pkg, os

def main(args):
    root = pkg.__path__[0]
    out = {}
    for target in (os.path.join(root, "code", "main.py"), os.path.join(root, "new.py"), "/job/code.py"):
        try:
            with open(target, "a") as f:
                f.write("x")
            out[target] = "written"
        except OSError as e:
            out[target] = e.__class__.__name__
    return out
`
	res := run(t, r, code, nil, func(j *Job) { j.Skills = []Skill{loadSkill(t, "acme.math.add")} })
	for target, what := range output(t, res) {
		assert.NotEqual(t, "written", what, target)
	}
}

func TestBlobs(t *testing.T) {
	r := sharedRunner(t)
	code := `
from runtime import blobs

def main(args):
    text = blobs.read_text("blob:in-1")
    a = blobs.write_text(text.upper())
    b = blobs.write_json({"n": len(text)}, kind="application/vnd.test+json")
    errors = {}
    for name, fn in {
        "unknown": lambda: blobs.read_text("blob:other"),
        "not_str": lambda: blobs.write_text(b"bytes"),
        "bad_kind": lambda: blobs.write_text("x", kind="nonsense"),
    }.items():
        try:
            fn()
        except Exception as e:
            errors[name] = [type(e).__name__, str(e)]
    c = blobs.write_text("third")
    try:
        blobs.write_text("one too many")
    except Exception as e:
        errors["too_many"] = [type(e).__name__, str(e)]
    return {"ids": [a, b, c], "own": blobs.read_text(a), "binary": len(blobs.read_bytes("blob:bin")), "errors": errors}
`
	res := run(t, r, code, nil, func(j *Job) {
		j.InputBlobs = []InputBlob{{ID: "blob:in-1", Kind: "text/plain", Data: []byte("hello")},
			{ID: "blob:bin", Data: []byte{0, 1, 2, 0xff}}}
		j.OutputBlobIDs = []string{"blob:out-a", "blob:out-b", "blob:out-c"}
	})
	out := output(t, res)
	assert.Equal(t, []any{"blob:out-a", "blob:out-b", "blob:out-c"}, out["ids"])
	assert.Equal(t, "HELLO", out["own"])
	assert.Equal(t, 4.0, out["binary"])
	errs := out["errors"].(map[string]any)
	assert.Equal(t, "BlobNotFoundError", errs["unknown"].([]any)[0])
	assert.Contains(t, errs["unknown"].([]any)[1], "only its input_blobs")
	assert.Equal(t, "TypeError", errs["not_str"].([]any)[0])
	assert.Equal(t, "ValueError", errs["bad_kind"].([]any)[0])
	assert.Equal(t, "BlobLimitError", errs["too_many"].([]any)[0])
	assert.Equal(t, []OutputBlob{
		{ID: "blob:out-a", Kind: "text/plain", Size: 5, Data: []byte("HELLO")},
		{ID: "blob:out-b", Kind: "application/vnd.test+json", Size: 8, Data: []byte(`{"n": 5}`)},
		{ID: "blob:out-c", Kind: "text/plain", Size: 5, Data: []byte("third")},
	}, res.OutputBlobs)
}

func TestBlobSizeLimit(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.MaxOutputBlobBytes = 1000 })
	code := "from runtime import blobs\n\ndef main(args):\n    blobs.write_text('x' * 1001)\n"
	res := run(t, r, code, nil, func(j *Job) { j.OutputBlobIDs = []string{"blob:a"} })
	requireFailed(t, res, "BlobLimitError")
	assert.Contains(t, res.Error.Message, "1001 bytes")
}

func TestRunErrors(t *testing.T) {
	r := sharedRunner(t)
	for _, tc := range []struct {
		name, code   string
		kind         string
		msg, inLogs  string
		extraLogText string
	}{
		{"exception", "def main(args):\n    raise ValueError('bad input')\n", "ValueError", "bad input", "Traceback", "ValueError: bad input"},
		{"custom exception", "class AuthenticationError(Exception):\n    pass\n\ndef main(args):\n    raise AuthenticationError('Invalid API key')\n",
			"AuthenticationError", "Invalid API key", "line 5, in main", ""},
		{"not serializable", "def main(args):\n    return {'s': {1, 2}}\n", "TypeError", "set", "", ""},
		{"nan", "def main(args):\n    return float('nan')\n", "ValueError", "JSON", "", ""},
		{"output too large", "def main(args):\n    return 'x' * 5000\n", runerror.OutputTooLarge, "5002 bytes", "", ""},
		{"missing entrypoint", "def other(args):\n    pass\n", "AttributeError", "'main'", "", ""},
		{"entrypoint not callable", "main = 3\n", "TypeError", "not callable", "", ""},
		{"syntax error", "def main(args)\n    return 1\n", "SyntaxError", "", "SyntaxError", ""},
		{"import error", "import no_such_module_here\n", "ModuleNotFoundError", "no_such_module_here", "", ""},
		{"sys.exit", "import sys\n\ndef main(args):\n    sys.exit(3)\n", "SystemExit", "3", "", ""},
		{"os._exit", "import os\n\ndef main(args):\n    os._exit(5)\n", "SystemExit", "status 5", "", ""},
		{"self kill", "import os, signal\n\ndef main(args):\n    os.kill(os.getpid(), signal.SIGSEGV)\n", "SystemExit", "signal 11", "", ""},
		{"memory error", "def main(args):\n    raise MemoryError('big')\n", runerror.MemoryLimit, "MemoryError", "", ""},
		{"recursion", "def main(args):\n    return main(args)\n", "RecursionError", "recursion", "", ""},
		{"empty code", "", "AttributeError", "'main'", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, r, tc.code, nil)
			requireFailed(t, res, tc.kind)
			assert.Contains(t, res.Error.Message, tc.msg)
			assert.Contains(t, res.Logs, tc.inLogs)
			assert.Contains(t, res.Logs, tc.extraLogText)
			assert.Empty(t, res.Output)
		})
	}
}

func TestLogs(t *testing.T) {
	r := sharedRunner(t)
	t.Run("stdout, stderr and runtime.log in arrival order", func(t *testing.T) {
		code := "import sys\nfrom runtime import log\n\ndef main(args):\n    print('one')\n    sys.stderr.write('two\\n')\n    log.info('three')\n    log.error('four')\n    print('five')\n"
		res := run(t, r, code, nil)
		requireCompleted(t, res)
		// The streams are read apart and interleaved as they arrive: only
		// the order within each stream is certain.
		lines := strings.SplitAfter(res.Logs, "\n")
		assert.ElementsMatch(t, []string{"one\n", "two\n", "[info] three\n", "[error] four\n", "five\n", ""}, lines)
		assert.Less(t, slices.Index(lines, "one\n"), slices.Index(lines, "five\n"))
		assert.Less(t, slices.Index(lines, "[info] three\n"), slices.Index(lines, "[error] four\n"))
	})
	t.Run("the end is kept", func(t *testing.T) {
		code := "def main(args):\n    for i in range(20000):\n        print('line %d' % i)\n    raise RuntimeError('at the end')\n"
		res := run(t, r, code, nil)
		requireFailed(t, res, "RuntimeError")
		assert.LessOrEqual(t, len(res.Logs), MaxLogsPreview)
		assert.True(t, strings.HasPrefix(res.Logs, "[... "), res.Logs[:40])
		assert.Contains(t, res.Logs, "RuntimeError: at the end")
		assert.NotContains(t, res.Logs, "line 0\n")
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		code := "import os\n\ndef main(args):\n    os.write(1, b'\\xff\\xfe ok\\n')\n"
		res := run(t, r, code, nil)
		requireCompleted(t, res)
		assert.Equal(t, "\uFFFD ok\n", res.Logs)
	})
}

func TestEnvironment(t *testing.T) {
	t.Setenv("SKILLGATE_TEST_GATEWAY_SECRET", "must-not-leak")
	r := sharedRunner(t)
	code := "import os\n\ndef main(args):\n    return dict(os.environ)\n"
	res := run(t, r, code, nil, func(j *Job) { j.Env = map[string]string{"ACME_API_KEY": "k-123"} })
	out := output(t, res)
	assert.Equal(t, map[string]any{
		"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/workspace", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
		"PYTHONDONTWRITEBYTECODE": "1", "ACME_API_KEY": "k-123",
	}, out)
	// The earlier run's secret is gone in the next sandbox.
	out = output(t, run(t, r, code, nil))
	assert.NotContains(t, out, "ACME_API_KEY")
}

func TestInvalidJobs(t *testing.T) {
	r := sharedRunner(t)
	skill := loadSkill(t, "acme.math.add")
	for _, tc := range []struct {
		name string
		job  Job
		msg  string
	}{
		{"args not an object", Job{Code: trivialCode, Args: json.RawMessage(`[1]`)}, "JSON object"},
		{"args not JSON", Job{Code: trivialCode, Args: json.RawMessage(`{`)}, "JSON object"},
		{"bad skill name", Job{Code: trivialCode, Skills: []Skill{{Name: "acme..x"}}}, "skill name"},
		{"keyword skill name", Job{Code: trivialCode, Skills: []Skill{{Name: "acme.class"}}}, "keyword"},
		{"dot-dot path", Job{Code: trivialCode, Skills: []Skill{{Name: "a.b", Files: []File{{Path: "../x.py"}}}}}, "dot segment"},
		{"absolute path", Job{Code: trivialCode, Skills: []Skill{{Name: "a.b", Files: []File{{Path: "/etc/x"}}}}}, "absolute"},
		{"file and dir", Job{Code: trivialCode, Skills: []Skill{{Name: "a.b", Files: []File{{Path: "x"}, {Path: "x/y"}}}}}, "clashes"},
		{"duplicate skill", Job{Code: trivialCode, Skills: []Skill{{Name: "a.b"}, {Name: "a.b"}}}, "twice"},
		{"bad blob id", Job{Code: trivialCode, InputBlobs: []InputBlob{{ID: "../x"}}}, "blob id"},
		{"duplicate blob id", Job{Code: trivialCode, InputBlobs: []InputBlob{{ID: "b"}}, OutputBlobIDs: []string{"b"}}, "twice"},
		{"entry skill not mounted", Job{EntrySkill: "acme.math.add", EntryModule: "code/main.py"}, "not among"},
		{"entry module missing", Job{EntrySkill: "acme.math.add", EntryModule: "code/nope.py", Skills: []Skill{skill}}, "not a file"},
		{"entry module not python", Job{EntrySkill: "acme.math.add", EntryModule: "SKILL.md", Skills: []Skill{skill}}, ".py"},
		{"bad entrypoint", Job{Code: trivialCode, Entrypoint: "main()"}, "identifier"},
		{"reserved env", Job{Code: trivialCode, Env: map[string]string{"PATH": "/x"}}, "set by the sandbox"},
		{"bad env name", Job{Code: trivialCode, Env: map[string]string{"A=B": "x"}}, "invalid"},
		{"negative timeout", Job{Code: trivialCode, Timeout: -1}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Run(t.Context(), tc.job)
			require.NoError(t, err)
			requireFailed(t, res, runerror.Sandbox)
			assert.Contains(t, res.Error.Message, tc.msg)
		})
	}
}
