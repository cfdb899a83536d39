package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// heldAsync starts a background run that lasts until release is closed
// and returns its id.
func heldAsync(t *testing.T, release chan struct{}) (*env, string) {
	t.Helper()
	e, _ := newExecEnv(t, func(job sandbox.Job) (*sandbox.Result, error) {
		job.Observer.Admitted()
		<-release
		return &sandbox.Result{Status: sandbox.StatusCompleted, Output: json.RawMessage(`{}`)}, nil
	})
	res, werr := e.httpFront("").call("run_code", `{"language":"python","code":"x","async":true}`)
	require.Nil(t, werr)
	var ref struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(res, &ref))
	return e, ref.RunID
}

// getRunWhileWaiting calls get_run with wait_ms in the background and
// runs then() once the call is waiting (in flight on the HTTP front), or
// returns at once if the call answered first.
func getRunWhileWaiting(ctx context.Context, t *testing.T, e *env, id string, then func()) (json.RawMessage, *transport.Error) {
	t.Helper()
	f := e.d.Front(metrics.FrontHTTP)
	who, err := f.Authenticate("", nil)
	require.NoError(t, err)
	type answer struct {
		res json.RawMessage
		err *transport.Error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := f.Serve(ctx, &Request{Method: "get_run", Remote: "test",
			Identity: who, Params: json.RawMessage(`{"run_id":"` + id + `","wait_ms":60000}`)})
		done <- answer{res, err}
	}()
	inflight := e.metrics.Inflight.WithLabelValues(metrics.FrontHTTP)
	for range 60_000 { // a minute at most: a safety net only
		select {
		case a := <-done:
			return a.res, a.err
		default:
		}
		if testutil.ToFloat64(inflight) == 1 {
			then()
			a := <-done
			return a.res, a.err
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("get_run neither answered nor waited")
	return nil, nil
}

// get_run with wait_ms waits for the run to end and answers its run
// object; without wait_ms, or when the wait runs out first, it answers
// the run as it is.
func TestGetRunWaits(t *testing.T) {
	release := make(chan struct{})
	e, id := heldAsync(t, release)
	c := e.httpFront("")
	for _, params := range []string{`{"run_id":"` + id + `"}`, `{"run_id":"` + id + `","wait_ms":1}`} {
		var run RunResult
		mustCall(t, c, "get_run", params, &run)
		assert.Equal(t, "running", run.Status, params)
	}
	res, werr := getRunWhileWaiting(t.Context(), t, e, id, func() { close(release) })
	require.Nil(t, werr)
	var run RunResult
	require.NoError(t, json.Unmarshal(res, &run))
	assert.Equal(t, sandbox.StatusCompleted, run.Status, "the wait ends with the run")
}

// A get_run whose caller goes away while it waits ends with the call's
// cancellation, not with the run's state.
func TestGetRunWaitCanceledByCaller(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e, id := heldAsync(t, release)
	ctx, cancel := context.WithCancel(t.Context())
	_, werr := getRunWhileWaiting(ctx, t, e, id, cancel)
	require.NotNil(t, werr)
	assert.Equal(t, StringCanceled, werr.EffectiveCode())
}

// cancel_run and watch_run of an unknown run are RUN_NOT_FOUND; watch_run
// without a stream says how to follow a run instead.
func TestRunMethodsRefusals(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e, id := heldAsync(t, release)
	unknown := "run_0123456789abcdef"
	for _, c := range e.fronts() {
		checkError(t, c, paramCase{"cancel_run", `{"run_id":"` + unknown + `"}`, StringRunNotFound, ""})
		checkError(t, c, paramCase{"watch_run", `{"run_id":"` + unknown + `"}`, StringRunNotFound, ""})
	}
	_, werr := e.httpFront("").call("watch_run", `{"run_id":"`+id+`"}`)
	require.NotNil(t, werr)
	assert.Equal(t, transport.StringInvalidParams, werr.EffectiveCode())
	assert.Contains(t, werr.Details, "without a stream, poll get_run with wait_ms")
}

// list_skills pages are never longer than limit, also when skills the
// caller may not see are skipped on the way; limit goes up to 2^31-1.
func TestListPagesWithHiddenSkills(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"aaa.hidden", "acme.a", "acme.b", "acme.c"} {
		writeSkill(t, dir, n, "1.0.0", nil)
	}
	const token = "sgt_acme-only-token-for-tests"
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`identities:
  - {name: acme, class: agent, tokens: [%s], methods: ["*"], namespaces: [acme]}
`, auth.HashToken(token))), 0o600))
	store, err := auth.Load(path, auth.Options{Logger: zerolog.Nop()})
	require.NoError(t, err)
	e := newEnvOpts(t, dir, 256<<10, func(o *Options) { o.Authn = store })
	for _, c := range e.as(token) {
		var page ListSkillsResult
		mustCall(t, c, "list_skills", `{"limit":2}`, &page)
		require.Len(t, page.Skills, 2, c.name())
		assert.Equal(t, "acme.a", page.Skills[0].Name)
		assert.Equal(t, "acme.b", page.Skills[1].Name)
		require.NotNil(t, page.NextCursor, c.name())
		mustCall(t, c, "list_skills", `{"limit":2147483647}`, &page)
		assert.Len(t, page.Skills, 4, "%s: acme's three and the guide", c.name())
		checkError(t, c, paramCase{"list_skills", `{"limit":2147483648}`, transport.StringInvalidParams, "limit"})
	}
}
