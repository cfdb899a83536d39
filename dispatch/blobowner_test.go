package dispatch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

const (
	tokenAlice = "sgt_alice-token-for-blob-tests"
	tokenBob   = "sgt_bob-token-for-blob-tests"
)

// newOwnersEnv serves two identities, alice and bob (bob with a blob
// quota of 100 bytes), and a fake runner answering with result.
func newOwnersEnv(t *testing.T, result func(sandbox.Job) (*sandbox.Result, error)) (*env, *fakeRunner) {
	file := fmt.Sprintf(`identities:
  - {name: alice, class: agent, tokens: [%s], methods: ["*"], namespaces: ["*"]}
  - {name: bob, class: agent, tokens: [%s], methods: ["*"], namespaces: ["*"], limits: {blob_store_bytes: 100}}
`, auth.HashToken(tokenAlice), auth.HashToken(tokenBob))
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	r := &fakeRunner{result: result}
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
		o.Authn = store
		o.Limiter = auth.NewLimiter((&fakeClock{now: time.Unix(1000, 0)}).Now)
		o.Runner = r
	})
	return e, r
}

// as returns a caller for each front door, authenticated with token.
func (e *env) as(token string) []caller {
	dial := func() *session.Conn {
		c := e.framedRaw()
		require.NoError(e.t, initialize(c, token))
		return c
	}
	return []caller{e.redialing(dial), e.httpFront("Bearer " + token)}
}

func createBlob(t *testing.T, c caller, content string) string {
	t.Helper()
	res, err := c.call("create_blob", `{"content":"`+content+`"}`)
	require.Nil(t, err, "%v", err)
	var out CreateBlobResult
	require.NoError(t, json.Unmarshal(res, &out))
	return out.BlobID
}

// Item 8: a blob belongs to the identity that created it; another one
// gets BLOB_NOT_FOUND, the answer of an unknown id, on read_blob and as a
// run's input.
func TestBlobsBelongToTheirCreator(t *testing.T) {
	e, r := newOwnersEnv(t, completed(`{}`))
	alice, bob := e.as(tokenAlice), e.as(tokenBob)
	unknown := e.blobs.NewID()
	for i := range alice {
		id := createBlob(t, alice[i], "alice's secret")
		for _, a := range alice {
			_, err := a.call("read_blob", `{"blob_id":"`+id+`"}`)
			assert.Nil(t, err, "alice reads her blob over %s from %s", a.name(), alice[i].name())
		}
		for _, b := range bob {
			_, errOther := b.call("read_blob", `{"blob_id":"`+id+`"}`)
			_, errUnknown := b.call("read_blob", `{"blob_id":"`+unknown+`"}`)
			require.NotNil(t, errOther, "bob must not read alice's blob over %s", b.name())
			require.NotNil(t, errUnknown)
			assert.Equal(t, StringBlobNotFound, errOther.EffectiveCode())
			assert.EqualValues(t, transport.CodeInvalidParams, errOther.Code)
			assert.Equal(t, errUnknown.Message, errOther.Message)
			assert.Equal(t, strings.ReplaceAll(errUnknown.Details, unknown, id), errOther.Details, "indistinguishable from an unknown id")

			runs := len(r.jobs)
			_, err := b.call("run_code", `{"language":"python","code":"x","input_blobs":["`+id+`"]}`)
			require.NotNil(t, err, "bob must not run with alice's blob over %s", b.name())
			assert.Equal(t, StringBlobNotFound, err.EffectiveCode())
			assert.Len(t, r.jobs, runs, "no sandbox started")
		}
		_, err := alice[i].call("run_code", `{"language":"python","code":"x","input_blobs":["`+id+`"]}`)
		require.Nil(t, err)
		assert.Equal(t, "alice's secret", string(r.last().InputBlobs[0].Data))
	}
}

// A run's output blobs belong to the identity of the run.
func TestRunOutputsBelongToTheRun(t *testing.T) {
	e, _ := newOwnersEnv(t, completed(`{}`, sandbox.OutputBlob{Kind: "text/plain", Data: []byte("made by the run")}))
	alice, bob := e.as(tokenAlice), e.as(tokenBob)
	for i := range alice {
		res, err := alice[i].call("run_code", `{"language":"python","code":"x"}`)
		require.Nil(t, err)
		var run RunResult
		require.NoError(t, json.Unmarshal(res, &run))
		require.Len(t, run.OutputBlobs, 1)
		_, err = alice[1-i].call("read_blob", `{"blob_id":"`+run.OutputBlobs[0]+`"}`)
		assert.Nil(t, err)
		_, err = bob[i].call("read_blob", `{"blob_id":"`+run.OutputBlobs[0]+`"}`)
		require.NotNil(t, err)
		assert.Equal(t, StringBlobNotFound, err.EffectiveCode())
	}
}

// Open mode: every caller is the identity "anonymous" and shares its blobs.
func TestAnonymousCallersShareBlobs(t *testing.T) {
	e := newEnv(t, examplesDir())
	fronts := e.fronts()
	id := createBlob(t, fronts[0], "shared")
	_, err := fronts[1].call("read_blob", `{"blob_id":"`+id+`"}`)
	assert.Nil(t, err)
	_, err = e.fronts()[0].call("read_blob", `{"blob_id":"`+id+`"}`)
	assert.Nil(t, err, "another connection, the same anonymous owner")
	info, serr := e.blobs.Stat(t.Context(), id)
	require.NoError(t, serr)
	assert.Equal(t, auth.AnonymousName, info.Owner)
}

// Item 12: over a quota, create_blob and run outputs answer STORAGE_FULL
// with details and a retry hint, keep nothing, and earlier blobs stay.
func TestStorageFullAnswers(t *testing.T) {
	e, _ := newOwnersEnv(t, completed(`{}`,
		sandbox.OutputBlob{Kind: "text/plain", Data: []byte(strings.Repeat("a", 15))},
		sandbox.OutputBlob{Kind: "text/plain", Data: []byte(strings.Repeat("b", 30))}))
	for _, b := range e.as(tokenBob) {
		t.Run(b.name(), func(t *testing.T) {
			kept := createBlob(t, b, strings.Repeat("k", 60))
			_, err := b.call("create_blob", `{"content":"`+strings.Repeat("x", 60)+`"}`)
			require.NotNil(t, err)
			assert.Equal(t, StringStorageFull, err.EffectiveCode())
			assert.EqualValues(t, transport.CodeApplication, err.Code)
			assert.Contains(t, err.Details, "this identity's blobs hold 60 of its 100 bytes")
			require.NotNil(t, err.Retry)
			assert.Positive(t, err.Retry.SuggestedDelayMS)

			_, err = b.call("run_code", `{"language":"python","code":"x"}`)
			require.NotNil(t, err, "the second output blob does not fit")
			assert.Equal(t, StringStorageFull, err.EffectiveCode())
			count, _ := e.blobs.Usage()
			assert.Equal(t, 1, count, "the run's first blob was removed again")
			assert.Equal(t, int64(60), e.blobs.OwnerUsage("bob"))
			_, rerr := b.call("read_blob", `{"blob_id":"`+kept+`"}`)
			assert.Nil(t, rerr, "earlier blobs stay intact")
			require.NoError(t, e.blobs.Remove(t.Context(), kept))
		})
	}
	alice := e.as(tokenAlice)[1]
	createBlob(t, alice, strings.Repeat("y", 200)) // alice has no quota
}

// Item 11: client mistakes in a run are -32602 before any sandbox starts.
func TestRunParamMistakes(t *testing.T) {
	e, r := newExecEnv(t, completed(`{}`))
	for _, c := range e.fronts() {
		for _, tc := range []struct{ params, param string }{
			{`{"language":"python","code":"x","entrypoint":"1main"}`, "entrypoint"},
			{`{"language":"python","code":"x","entrypoint":"main()"}`, "entrypoint"},
			{`{"language":"python","code":"x","entrypoint":"class"}`, "entrypoint"},
			{`{"language":"python","code":"x","entrypoint":"a.b"}`, "entrypoint"},
			{`{"language":"python","code":"x","mount_skills":["acme.math.add@1.0.0","acme.math.add@1.1.0"]}`, "mount_skills[1]"},
			{`{"language":"python","code":"x","mount_skills":["acme.math.add","acme.math.add"]}`, "mount_skills[1]"},
		} {
			_, err := c.call("run_code", tc.params)
			require.NotNil(t, err, "%s %s", c.name(), tc.params)
			assert.Equal(t, transport.StringInvalidParams, err.EffectiveCode(), tc.params)
			assert.Equal(t, `"`+tc.param+`"`, string(err.Extra["param"]), "%s: %s", tc.params, err.Details)
		}
		_, err := c.call("run_code", `{"language":"python","code":"x","input_blobs":["`+e.putBlob(t, "a")+`","`+e.putBlob(t, "b")+`"]}`)
		require.Nil(t, err)
	}
	assert.Len(t, r.jobs, 2, "only the valid runs reached the runner")
	id := e.putBlob(t, "twice")
	_, err := e.fronts()[1].call("run_code", `{"language":"python","code":"x","input_blobs":["`+id+`","`+id+`"]}`)
	require.Nil(t, err, "a blob listed twice is given once")
	assert.Len(t, r.last().InputBlobs, 1)
}

// Item 16: a run's output must be a JSON object.
func TestRunOutputMustBeAnObject(t *testing.T) {
	for _, out := range []string{`[1,2]`, `"text"`, `42`, `true`} {
		e, _ := newExecEnv(t, completed(out, sandbox.OutputBlob{Kind: "text/plain", Data: []byte("x")}))
		res, err := e.fronts()[1].call("run_code", `{"language":"python","code":"x"}`)
		require.Nil(t, err)
		var run RunResult
		require.NoError(t, json.Unmarshal(res, &run))
		assert.Equal(t, "failed", run.Status, out)
		require.NotNil(t, run.Error)
		assert.Equal(t, runerror.InvalidOutput, run.Error.Type)
		assert.Contains(t, run.Error.Message, "must be a JSON object")
		assert.Nil(t, run.Output)
		assert.Empty(t, run.OutputBlobs)
		count, _ := e.blobs.Usage()
		assert.Zero(t, count, "a failed run keeps no blobs")
		assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.SandboxRuns.WithLabelValues("run_code", "failed", "invalid_output")))
	}
}

// Item 10 (above the sandbox): a user class of a reserved name is counted
// as an exception, not as an infrastructure failure.
func TestUserReservedTypeIsAnException(t *testing.T) {
	e, _ := newExecEnv(t, func(sandbox.Job) (*sandbox.Result, error) {
		return &sandbox.Result{Status: sandbox.StatusFailed, Error: &sandbox.RunError{Type: sandbox.UserTypePrefix + runerror.Sandbox, Message: "fake"}}, nil
	})
	res, err := e.fronts()[1].call("run_code", `{"language":"python","code":"x"}`)
	require.Nil(t, err)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	assert.Nil(t, run.Retry)
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.SandboxRuns.WithLabelValues("run_code", "failed", "exception")))
	assert.Zero(t, testutil.ToFloat64(e.metrics.SandboxRuns.WithLabelValues("run_code", "failed", "sandbox_error")))
}

// Item 11: logs over their cap are summarized as such, not as a 4 KB output.
func TestLogsCapSummary(t *testing.T) {
	e, _ := newExecEnv(t, func(sandbox.Job) (*sandbox.Result, error) {
		return &sandbox.Result{Status: sandbox.StatusFailed, Error: &sandbox.RunError{Type: runerror.OutputTooLarge,
			Message: "the run wrote more than 1048576 bytes to stdout/stderr and was killed"}}, nil
	})
	res, err := e.fronts()[1].call("run_code", `{"language":"python","code":"x"}`)
	require.Nil(t, err)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	assert.NotContains(t, run.Summary, "4 KB")
	assert.Contains(t, run.Summary, "more than 1048576 bytes to stdout/stderr")
}
