package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every metric follows the Prometheus naming conventions and has help.
func TestMetricsLint(t *testing.T) {
	m := New("test")
	m.Method(FrontFramed, "list_skills").OK.Inc()
	m.ConnectionsClosed.WithLabelValues("tcp", "peer_closed").Inc()
	problems, err := testutil.GatherAndLint(m.Registry)
	require.NoError(t, err)
	assert.Empty(t, problems)
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		assert.True(t, strings.HasPrefix(name, "skillgate_"), name)
		assert.NotEmpty(t, f.GetHelp(), name)
	}
}

func TestMethodMetricsAreShared(t *testing.T) {
	m := New("test")
	a, b := m.Method(FrontHTTP, "read_blob"), m.Method(FrontHTTP, "read_blob")
	assert.Same(t, a, b)
	a.Failed("BLOB_NOT_FOUND")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.Requests.WithLabelValues("http", "read_blob", "BLOB_NOT_FOUND")))
}

func TestHealthEndpoints(t *testing.T) {
	m := New("test")
	var h Health
	srv := httptest.NewServer(m.Handler(&h, HandlerOptions{}))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		buf := new(strings.Builder)
		_, _ = io.Copy(buf, resp.Body)
		return resp.StatusCode, buf.String()
	}
	code, body := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "starting")
	h.SetReady()
	code, body = get("/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ready\n", body)
	h.SetDetails("sandbox.mode: rootless\nsandbox.memory: rlimit\n")
	code, body = get("/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ready\nsandbox.mode: rootless\nsandbox.memory: rlimit\n", body)
	h.SetNotReady("draining")
	code, body = get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "not ready: draining\nsandbox.mode: rootless\nsandbox.memory: rlimit\n", body)
	code, _ = get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body = get("/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "skillgate_build_info")
	code, _ = get("/debug/pprof/")
	assert.Equal(t, http.StatusNotFound, code, "pprof only when asked for")
}

// TestBuildInfoRevision: the revision label is the binary's vcs.revision,
// or "unknown" when the build recorded none (test binaries never do).
func TestBuildInfoRevision(t *testing.T) {
	want := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				want = s.Value
			}
		}
	}
	m := New("v1.2.3")
	fams, err := m.Registry.Gather()
	require.NoError(t, err)
	var labels map[string]string
	for _, f := range fams {
		if f.GetName() == "skillgate_build_info" {
			labels = map[string]string{}
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
		}
	}
	require.NotNil(t, labels)
	assert.Equal(t, want, labels["revision"])
	assert.Equal(t, "v1.2.3", labels["version"])
	assert.Equal(t, runtime.Version(), labels["goversion"])
}
