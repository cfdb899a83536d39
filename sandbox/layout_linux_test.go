package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
)

func bashJob(code string) func(*Job) {
	return func(j *Job) { j.Code, j.Language = code, LanguageBash }
}

// A bash run completes with output {"exit_code": 0}; its stdout and stderr
// are the run's logs, as print's are.
func TestBashRunCompletes(t *testing.T) {
	r := sharedRunner(t)
	res := run(t, r, "", nil, bashJob(`echo out; echo err >&2; pwd; id -u; cat /etc/hostname`))
	requireCompleted(t, res)
	assert.JSONEq(t, `{"exit_code":0}`, string(res.Output))
	for _, want := range []string{"out\n", "err\n", "/workspace\n", "1000\n", "sandbox\n"} {
		assert.Contains(t, res.Logs, want)
	}
}

// A status other than 0, a syntax error and a signal are failed runs whose
// error names the status; the script's own words are in the logs.
func TestBashRunFailures(t *testing.T) {
	r := sharedRunner(t)
	for _, tc := range []struct{ code, message, log string }{
		{"echo about to fail; exit 3", "bash exited with status 3", "about to fail"},
		{"if then fi (", "bash exited with status 2", "syntax error"},
		{"kill -TERM $$", "bash was killed by SIGTERM (signal 15)", ""},
		{"no-such-command-here", "bash exited with status 127", "command not found"},
	} {
		res := run(t, r, "", nil, bashJob(tc.code))
		require.Equal(t, StatusFailed, res.Status, tc.code)
		assert.Equal(t, "ExitStatus", res.Error.Type, tc.code)
		assert.Equal(t, tc.message, res.Error.Message, tc.code)
		assert.Contains(t, res.Logs, tc.log, tc.code)
	}
	res := run(t, r, "", nil, func(j *Job) { j.Code, j.Language = "true", "ruby" })
	require.Equal(t, StatusFailed, res.Status)
	assert.Equal(t, runerror.Sandbox, res.Error.Type)
	assert.Contains(t, res.Error.Message, `language "ruby"`)
}

// Every mounted skill's files are at /skills/<name>/, Agent Skills folders
// included, read-only and exactly as in the package, so that a skill's
// documented commands work from its folder; every input blob is a file at
// /blobs/<id without "blob:">. A python3 started by bash sees the same.
func TestRunFileLayout(t *testing.T) {
	r := sharedRunner(t)
	csv := Skill{Name: "csv-report"}
	root := "../examples/skills/csv-report"
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		csv.Files = append(csv.Files, File{Path: filepath.ToSlash(rel), Data: data})
		return err
	}))
	add := Skill{Name: "acme.math.add", Entrypoint: "code/main.py", Export: "main",
		Files: []File{{Path: "code/main.py", Data: []byte("def main(args):\n    return args['a'] + args['b']\n")}}}
	script := `set -e
cd /skills/csv-report
python3 scripts/summarize.py /blobs/0123abcd /workspace/summary.json
cat /workspace/summary.json; echo
ls /skills
python3 -c 'import sys; print(open("/skills/acme.math.add/code/main.py").read().splitlines()[0])'
if touch /skills/csv-report/x 2>/dev/null; then echo writable; else echo read-only; fi`
	res := run(t, r, "", nil, bashJob(script), func(j *Job) {
		j.Skills = []Skill{csv, add}
		j.InputBlobs = []InputBlob{{ID: "blob:0123abcd", Kind: "text/csv", Data: []byte("name,n\na,1\nb,\n")}}
	})
	requireCompleted(t, res)
	assert.Contains(t, res.Logs, "2 rows, 2 columns -> /workspace/summary.json")
	assert.Contains(t, res.Logs, `{"columns": {"n": {"empty": 1, "type": "int"}, "name": {"empty": 0, "type": "text"}}, "rows": 2}`)
	assert.Contains(t, res.Logs, "acme.math.add\ncsv-report\n")
	assert.Contains(t, res.Logs, "def main(args):")
	assert.Contains(t, res.Logs, "read-only")

	// The Python side: the same paths, and action skills stay importable.
	code := `
from skills.acme.math.add import main as add

def main(args):
    with open("/blobs/0123abcd") as f:
        blob = f.read()
    return {"sum": add({"a": 2, "b": 3}), "blob": blob, "files": sorted(__import__("os").listdir("/skills/csv-report/scripts"))}
`
	out := output(t, run(t, r, code, nil, func(j *Job) {
		j.Skills = []Skill{csv, add}
		j.InputBlobs = []InputBlob{{ID: "blob:0123abcd", Kind: "text/csv", Data: []byte("x")}}
	}))
	assert.Equal(t, 5.0, out["sum"])
	assert.Equal(t, "x", out["blob"])
	assert.Equal(t, []any{"summarize.py"}, out["files"])
}

func withOutputIDs(n int) func(*Job) {
	return func(j *Job) { j.OutputBlobIDs = outputIDs(n) }
}

// Files left in /workspace/outputs become output blobs, in name order after
// the ones written through runtime.blobs, with a kind from their extension;
// a bash run's output maps each name to its blob.
func TestOutputDirectoryBecomesBlobs(t *testing.T) {
	r := sharedRunner(t)
	res := run(t, r, "", nil, bashJob(`printf 'a,b\n1,2\n' > outputs/table.csv; echo '{"x":1}' > /workspace/outputs/data.json`), withOutputIDs(4))
	requireCompleted(t, res)
	assert.JSONEq(t, `{"exit_code":0,"outputs":{"data.json":"blob:out-0","table.csv":"blob:out-1"}}`, string(res.Output))
	require.Len(t, res.OutputBlobs, 2)
	assert.Equal(t, OutputBlob{ID: "blob:out-0", Kind: "application/json", Size: 8, Data: []byte("{\"x\":1}\n")}, res.OutputBlobs[0])
	assert.Equal(t, OutputBlob{ID: "blob:out-1", Kind: "text/csv", Size: 8, Data: []byte("a,b\n1,2\n")}, res.OutputBlobs[1])
	assert.Contains(t, res.Logs, "/workspace/outputs/table.csv is blob:out-1 (text/csv)")

	code := `
import os
from runtime import blobs
def main(args):
    first = blobs.write_text("by the API")
    with open("/workspace/plot.bin", "wb") as f:
        f.write(b"\x00\x01")
    # A rename between the writable directories, as a library finishing
    # a temporary file does (Landlock's REFER right).
    os.rename("/workspace/plot.bin", "/workspace/outputs/plot.bin")
    return {"first": first}
`
	res = run(t, r, code, nil, withOutputIDs(4))
	requireCompleted(t, res)
	require.Len(t, res.OutputBlobs, 2)
	assert.Equal(t, "blob:out-0", res.OutputBlobs[0].ID)
	assert.Equal(t, OutputBlob{ID: "blob:out-1", Kind: "application/octet-stream", Size: 2, Data: []byte{0, 1}}, res.OutputBlobs[1])
}

// An output directory over the run's blob limits, or holding anything but
// files, fails the run with an error that says so; nothing of it is kept.
func TestOutputDirectoryOverTheLimits(t *testing.T) {
	r := sharedRunner(t)
	res := run(t, r, "", nil, bashJob(`for i in 1 2 3; do echo $i > outputs/f$i.txt; done`), withOutputIDs(2))
	require.Equal(t, StatusFailed, res.Status)
	assert.Equal(t, runerror.OutputTooLarge, res.Error.Type)
	assert.Contains(t, res.Error.Message, "/workspace/outputs/f3.txt would be blob 3; this run may write at most 2 blobs")
	assert.Empty(t, res.OutputBlobs)

	big := ownRunner(t, func(c *Config) { c.MaxOutputBlobBytes = 1024 })
	res = run(t, big, "", nil, bashJob(`head -c 2048 /dev/zero > outputs/big.bin`), withOutputIDs(2))
	require.Equal(t, StatusFailed, res.Status)
	assert.Equal(t, runerror.OutputTooLarge, res.Error.Type)
	assert.Contains(t, res.Error.Message, "/workspace/outputs/big.bin is 2048 bytes; a blob may hold at most 1024")

	res = run(t, r, "", nil, bashJob(`mkdir outputs/sub; ln -s /etc/passwd outputs/link`), withOutputIDs(2))
	require.Equal(t, StatusFailed, res.Status)
	assert.Equal(t, "BlobError", res.Error.Type)
	assert.Contains(t, res.Error.Message, "/workspace/outputs/link is not a regular file")
}
