package skills

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRuntime stands in for the sandbox's runtime module: blobs come from
// inputs.json, written blobs are kept and printed by the driver.
const fakeRuntime = `import json, os, sys

_dir = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_dir, "inputs.json")) as f:
    _inputs = json.load(f)
written = {}


class _Blobs:
    def read_text(self, blob_id):
        return _inputs[blob_id]

    def write_text(self, content):
        blob_id = "blob:%032x" % (len(written) + 1)
        written[blob_id] = content
        return blob_id

    def write_json(self, obj):
        return self.write_text(json.dumps(obj))


class _Log:
    def info(self, msg):
        print("INFO", msg, file=sys.stderr)

    def error(self, msg):
        print("ERROR", msg, file=sys.stderr)


blobs = _Blobs()
log = _Log()
`

// driver imports the entrypoint as a module of the mounted skill package
// and calls the export, as the sandbox does.
const driver = `import importlib, json, sys
import runtime
mod = importlib.import_module(sys.argv[1])
fn = getattr(mod, sys.argv[2])
try:
    out = fn(json.loads(sys.argv[3]))
    print(json.dumps({"output": out, "blobs": runtime.written}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))
`

// runExample mounts s at skills/<dotted/name>/ and calls its export.
func runExample(t *testing.T, s *Skill, args string, inputs map[string]string) map[string]any {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	mount := filepath.Join(dir, "skills", filepath.FromSlash(strings.ReplaceAll(s.Manifest.Name, ".", "/")))
	for _, f := range s.FileData() {
		p := filepath.Join(mount, filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Data, 0o644))
	}
	in, err := json.Marshal(inputs)
	require.NoError(t, err)
	writeTree(t, dir, map[string]string{"runtime/__init__.py": fakeRuntime, "runtime/inputs.json": string(in), "driver.py": driver})

	module := "skills." + s.Manifest.Name + "." + strings.ReplaceAll(strings.TrimSuffix(s.Manifest.Runtime.Entrypoint, ".py"), "/", ".")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The script's folder is first on sys.path, so skills/ and runtime/ import.
	cmd := exec.CommandContext(ctx, python, "-B", "-s", "-E", "driver.py", module, s.Manifest.Runtime.Export, args)
	cmd.Dir = dir
	cmd.Env = []string{}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "python: %s %s", out, stderr.String())
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	return res
}

func exampleCatalog(t *testing.T) *Catalog {
	r, err := NewRegistry(Options{Dir: "../examples/skills", Logger: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r.Catalog()
}

func TestExampleMathAdd(t *testing.T) {
	cat := exampleCatalog(t)
	v1, err := cat.Resolve("acme.math.add", "1.0.0")
	require.NoError(t, err)
	v11, err := cat.Resolve("acme.math.add", "1.1.0")
	require.NoError(t, err)
	tests := []struct {
		name string
		s    *Skill
		args string
		want string
	}{
		{"1.0.0 adds", v1, `{"a": 2, "b": 3}`, `{"output": {"sum": 5}, "blobs": {}}`},
		{"1.0.0 floats", v1, `{"a": 0.5, "b": -2}`, `{"output": {"sum": -1.5}, "blobs": {}}`},
		{"1.0.0 has no values", v1, `{"values": [1, 2]}`, `{"error": "KeyError", "message": "'a'"}`},
		{"1.0.0 refuses bool", v1, `{"a": true, "b": 1}`, `{"error": "TypeError", "message": "a must be a number, got bool"}`},
		{"1.1.0 adds", v11, `{"a": 2, "b": 3}`, `{"output": {"sum": 5, "count": 2}, "blobs": {}}`},
		{"1.1.0 sums a list", v11, `{"values": [1, 2, 3.5]}`, `{"output": {"sum": 6.5, "count": 3}, "blobs": {}}`},
		{"1.1.0 empty list", v11, `{"values": []}`, `{"output": {"sum": 0, "count": 0}, "blobs": {}}`},
		{"1.1.0 refuses strings", v11, `{"values": [1, "2"]}`, `{"error": "TypeError", "message": "values[1] must be a number, got str"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runExample(t, tc.s, tc.args, nil)
			want, _ := json.Marshal(res)
			assert.JSONEq(t, tc.want, string(want))
		})
	}
}

func TestExampleWordcount(t *testing.T) {
	s, err := exampleCatalog(t).Resolve("acme.text.wordcount", "")
	require.NoError(t, err)
	text := "The cat and the dog.\nThe END, the end!\nit's a dog-eat-dog world\n"
	in := "blob:0123456789abcdef0123456789abcdef"
	res := runExample(t, s, `{"text_blob": "`+in+`", "top": 3}`, map[string]string{in: text})
	require.Contains(t, res, "output", "%v", res)
	out := res["output"].(map[string]any)
	assert.Equal(t, map[string]any{"lines": 3.0, "words": 13.0, "chars": float64(len(text)), "unique_words": 9.0,
		"top_words_blob": "blob:00000000000000000000000000000001"}, out)
	blobs := res["blobs"].(map[string]any)
	assert.JSONEq(t, `{"top": [{"word": "the", "count": 4}, {"word": "end", "count": 2}, {"word": "a", "count": 1}]}`,
		blobs["blob:00000000000000000000000000000001"].(string))

	res = runExample(t, s, `{"text_blob": "`+in+`", "top": 0}`, map[string]string{in: text})
	assert.Equal(t, "ValueError", res["error"])
}
