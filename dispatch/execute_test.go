package dispatch

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// fakeRunner records jobs and answers with a canned result.
type fakeRunner struct {
	mu     sync.Mutex
	jobs   []sandbox.Job
	result func(sandbox.Job) (*sandbox.Result, error)
}

func (f *fakeRunner) Run(_ context.Context, job sandbox.Job) (*sandbox.Result, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	return f.result(job)
}

func (f *fakeRunner) last() sandbox.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jobs[len(f.jobs)-1]
}

func newExecEnv(t *testing.T, result func(sandbox.Job) (*sandbox.Result, error)) (*env, *fakeRunner) {
	return newExecEnvIn(t, examplesDir(), result)
}

// newExecEnvIn serves the skills of dir with a fake runner and a gateway
// environment holding one secret and one variable no skill declares.
func newExecEnvIn(t *testing.T, dir string, result func(sandbox.Job) (*sandbox.Result, error)) (*env, *fakeRunner) {
	r := &fakeRunner{result: result}
	e := newEnvOpts(t, dir, 256<<10, func(o *Options) {
		o.Runner = r
		o.LookupEnv = func(k string) (string, bool) {
			v, ok := map[string]string{"ACME_API_KEY": "k-123", "HOME": "/root"}[k]
			return v, ok
		}
	})
	return e, r
}

func completed(output string, blobs ...sandbox.OutputBlob) func(sandbox.Job) (*sandbox.Result, error) {
	return func(job sandbox.Job) (*sandbox.Result, error) {
		var out []sandbox.OutputBlob
		for i, b := range blobs {
			b.ID = job.OutputBlobIDs[i]
			out = append(out, b)
		}
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(output), Logs: "hello\n",
			OutputBlobs: out, Duration: 12 * time.Millisecond}, nil
	}
}

func TestExecuteSkillJob(t *testing.T) {
	e, r := newExecEnv(t, completed(`{"sum":5}`, sandbox.OutputBlob{Kind: "application/json", Data: []byte(`{"a":1}`)}))
	for _, c := range e.fronts() {
		blob := e.putBlob(t, "input text")
		res, err := c.call("execute_skill", `{"name":"acme.math.add","version":"1.0.0","args":{"a":2,"b":3},"input_blobs":["`+blob+`"],"timeout_ms":1500}`)
		require.Nil(t, err)
		var run RunResult
		require.NoError(t, json.Unmarshal(res, &run))
		assert.Equal(t, "completed", run.Status)
		assert.JSONEq(t, `{"sum":5}`, string(run.Output))
		assert.Equal(t, "hello\n", run.LogsPreview)
		assert.True(t, strings.HasPrefix(run.RunID, "run_"))
		assert.Contains(t, run.Summary, "acme.math.add 1.0.0 completed")
		require.Len(t, run.OutputBlobs, 1)
		b, openErr := e.blobs.Open(t.Context(), run.OutputBlobs[0])
		require.NoError(t, openErr)
		data, _ := io.ReadAll(io.NewSectionReader(b, 0, b.Info().Size))
		_ = b.Close()
		assert.Equal(t, `{"a":1}`, string(data), "output blobs land in the store")

		job := r.last()
		assert.Equal(t, "acme.math.add", job.EntrySkill)
		assert.Equal(t, "code/main.py", job.EntryModule)
		assert.Equal(t, "main", job.Entrypoint)
		assert.JSONEq(t, `{"a":2,"b":3}`, string(job.Args))
		assert.Equal(t, 1500*time.Millisecond, job.Timeout)
		require.Len(t, job.Skills, 1)
		assert.Equal(t, "acme.math.add", job.Skills[0].Name)
		assert.Equal(t, "code/main.py", job.Skills[0].Entrypoint, "the mounted skill's re-export")
		assert.Equal(t, "main", job.Skills[0].Export)
		require.Len(t, job.InputBlobs, 1)
		assert.Equal(t, "input text", string(job.InputBlobs[0].Data))
		assert.Len(t, job.OutputBlobIDs, maxOutputBlobs)
		assert.Empty(t, job.Env, "acme.math.add declares no secrets")
	}
	assert.Equal(t, 2.0, testutil.ToFloat64(e.metrics.SandboxRuns.WithLabelValues("execute_skill", "completed", "ok")))
}

func TestRunCodeJob(t *testing.T) {
	e, r := newExecEnv(t, completed(`null`))
	for _, c := range e.fronts() {
		res, err := c.call("run_code", `{"language":"python","code":"def main(args):\n    return None\n",
			"mount_skills":["acme.math.add@1.0.0","acme.text.wordcount"],"limits":{"timeout_ms":700}}`)
		require.Nil(t, err)
		var run RunResult
		require.NoError(t, json.Unmarshal(res, &run))
		assert.Equal(t, "completed", run.Status)
		assert.Equal(t, "{}", string(run.Output), "a function returning None completed with nothing to say")
		job := r.last()
		assert.Equal(t, "main", job.Entrypoint, "default entrypoint")
		assert.Equal(t, 700*time.Millisecond, job.Timeout, "limits.timeout_ms")
		assert.Empty(t, job.Env, "run_code gets no secrets")
		require.Len(t, job.Skills, 2)
		assert.Equal(t, "acme.math.add", job.Skills[0].Name)
		assert.Equal(t, "acme.text.wordcount", job.Skills[1].Name)
	}
}

func TestFailedRunsAreResults(t *testing.T) {
	cases := map[string]struct {
		err    sandbox.RunError
		reason string
		retry  bool
	}{
		"exception": {sandbox.RunError{Type: "ValueError", Message: "bad input"}, "exception", false},
		"timeout":   {sandbox.RunError{Type: runerror.Timeout, Message: "timed out"}, "timeout", true},
		"memory":    {sandbox.RunError{Type: runerror.MemoryLimit, Message: "oom"}, "memory", false},
		"output":    {sandbox.RunError{Type: runerror.OutputTooLarge, Message: "5000 bytes"}, "output_too_large", false},
		"sandbox":   {sandbox.RunError{Type: runerror.Sandbox, Message: "boom"}, "sandbox_error", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, _ := newExecEnv(t, func(sandbox.Job) (*sandbox.Result, error) {
				rerr := tc.err
				return &sandbox.Result{Status: sandbox.StatusFailed, Error: &rerr, Logs: "Traceback…", Duration: time.Second}, nil
			})
			res, err := e.httpFront("").call("run_code", `{"language":"python","code":"x"}`)
			require.Nil(t, err, "execution failures are not protocol errors")
			var run RunResult
			require.NoError(t, json.Unmarshal(res, &run))
			assert.Equal(t, "failed", run.Status)
			require.NotNil(t, run.Error)
			assert.Equal(t, tc.err.Type, run.Error.Type)
			assert.Equal(t, tc.err.Message, run.Error.Message)
			assert.Equal(t, tc.retry, run.Retry != nil)
			assert.Nil(t, run.Output)
			assert.Empty(t, run.OutputBlobs)
			assert.NotEmpty(t, run.Summary)
			assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.SandboxRuns.WithLabelValues("run_code", "failed", tc.reason)))
		})
	}
}

func TestExecutionErrors(t *testing.T) {
	e, _ := newExecEnv(t, completed(`{}`))
	const ip = transport.StringInvalidParams
	cases := []paramCase{
		{"execute_skill", `{}`, ip, "name"},
		{"execute_skill", `{"name":"acme.style.guide"}`, ip, "name"},
		{"execute_skill", `{"name":"acme.nope"}`, StringSkillNotFound, ""},
		{"execute_skill", `{"name":"acme.math.add","version":"0.0.1"}`, StringSkillNotFound, ""},
		{"execute_skill", `{"name":"acme.math.add","args":[1]}`, ip, "args"},
		{"execute_skill", `{"name":"acme.math.add","timeout_ms":0}`, ip, "timeout_ms"},
		{"execute_skill", `{"name":"acme.math.add","input_blobs":"blob:x"}`, ip, "input_blobs"},
		{"execute_skill", `{"name":"acme.math.add","input_blobs":["../x"]}`, ip, "input_blobs[0]"},
		{"execute_skill", `{"name":"acme.math.add","input_blobs":["blob:0123456789abcdef0123456789abcdef"]}`, StringBlobNotFound, ""},
		{"run_code", `{"code":"x"}`, ip, "language"},
		{"run_code", `{"language":"javascript","code":"x"}`, ip, "language"},
		{"run_code", `{"language":"python"}`, ip, "code"},
		{"run_code", `{"language":"bash","code":"x","entrypoint":"main"}`, ip, "entrypoint"},
		{"run_code", `{"language":"python","code":"x","mount_skills":["pdf-tips","pdf-tips"]}`, ip, "mount_skills[1]"},
		{"run_code", `{"language":"python","code":"x","mount_skills":["acme.nope"]}`, StringSkillNotFound, ""},
		{"run_code", `{"language":"python","code":"x","limits":{"timeout_ms":-5}}`, ip, "limits.timeout_ms"},
		{"run_code", `{"language":"python","code":"x","limits":{"memory":5}}`, ip, "limits.memory"},
	}
	for _, c := range e.fronts() {
		for _, tc := range cases {
			checkError(t, c, tc)
		}
	}
}

func TestSandboxOverloadedAndUnavailable(t *testing.T) {
	e, _ := newExecEnv(t, func(sandbox.Job) (*sandbox.Result, error) { return nil, sandbox.ErrOverloaded })
	_, err := e.httpFront("").call("run_code", `{"language":"python","code":"x"}`)
	require.NotNil(t, err)
	assert.Equal(t, transport.StringOverloaded, err.EffectiveCode())
	require.NotNil(t, err.Retry)

	u := newEnvOpts(t, examplesDir(), 1024, func(o *Options) { o.RunnerUnavailable = "user namespaces are disabled" })
	_, err = u.httpFront("").call("execute_skill", `{"name":"acme.math.add"}`)
	require.NotNil(t, err)
	assert.Equal(t, StringSandboxUnavailable, err.EffectiveCode())
	assert.Contains(t, err.Details, "user namespaces")
}

func TestSecretsPassedOnlyWhenDeclared(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "acme.api.call", "1.0.0", nil)
	toml := "name = \"acme.api.call\"\nversion = \"1.0.0\"\ndescription = \"Calls an API.\"\nkind = \"action\"\n" +
		"[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\n" +
		"[permissions]\nsecrets = [\"ACME_API_KEY\", \"ACME_MISSING\"]\n"
	writeSkill(t, dir, "acme.api.call", "1.0.0", map[string]string{"skill.toml": toml})
	e, r := newExecEnvIn(t, dir, completed(`{}`))
	_, err := e.httpFront("").call("execute_skill", `{"name":"acme.api.call"}`)
	require.Nil(t, err)
	assert.Equal(t, map[string]string{"ACME_API_KEY": "k-123"}, r.last().Env)
}

// A skill's [runtime] cpus reaches its runs' job (the sandbox caps it by
// --run-cpus); run_code asks for none.
func TestSkillCPUsReachTheJob(t *testing.T) {
	dir := t.TempDir()
	toml := "name = \"acme.busy.loop\"\nversion = \"1.0.0\"\ndescription = \"Spins.\"\nkind = \"action\"\n" +
		"[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\ncpus = 0.5\n"
	writeSkill(t, dir, "acme.busy.loop", "1.0.0", map[string]string{"skill.toml": toml})
	e, r := newExecEnvIn(t, dir, completed(`{}`))
	_, err := e.httpFront("").call("execute_skill", `{"name":"acme.busy.loop"}`)
	require.Nil(t, err)
	assert.Equal(t, 0.5, r.last().CPUs)
	_, err = e.httpFront("").call("run_code", `{"language":"python","code":"def main(args):\n    return 1\n"}`)
	require.Nil(t, err)
	assert.Zero(t, r.last().CPUs)
}

// A client that disconnects cancels its runs.
func TestDisconnectCancelsRun(t *testing.T) {
	started, canceled := make(chan struct{}), make(chan struct{})
	r := &ctxRunner{started: started, canceled: canceled}
	e := newEnvOpts(t, examplesDir(), 1024, func(o *Options) { o.Runner = r })
	c := e.framed()
	go func() {
		_, _ = c.Call(context.Background(), "run_code", map[string]any{"language": "python", "code": "x"})
	}()
	<-started
	require.NoError(t, c.Close())
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not canceled when its client went away")
	}
}

// ctxRunner blocks each run until its context ends.
type ctxRunner struct{ started, canceled chan struct{} }

func (r *ctxRunner) Run(ctx context.Context, _ sandbox.Job) (*sandbox.Result, error) {
	close(r.started)
	<-ctx.Done()
	close(r.canceled)
	return nil, ctx.Err()
}

// A bash run_code reaches the sandbox as a bash job; an instruction skill
// (an Agent Skills folder) is mounted with all its files, to be run from
// /skills/<name>/.
func TestRunCodeBashMountsInstructionSkills(t *testing.T) {
	e, r := newExecEnv(t, completed(`{"exit_code":0}`))
	for _, c := range e.fronts() {
		_, err := c.call("run_code", `{"language":"bash","code":"ls /skills/pdf-tips","mount_skills":["pdf-tips","acme.style.guide"]}`)
		require.Nil(t, err)
		job := r.last()
		assert.Equal(t, sandbox.LanguageBash, job.Language)
		require.Len(t, job.Skills, 2)
		assert.Equal(t, "pdf-tips", job.Skills[0].Name)
		assert.Empty(t, job.Skills[0].Entrypoint, "nothing to import")
		var paths []string
		for _, f := range job.Skills[0].Files {
			paths = append(paths, f.Path)
		}
		assert.Contains(t, paths, "SKILL.md")
		assert.Contains(t, paths, "references/REFERENCE.md")
	}
}
