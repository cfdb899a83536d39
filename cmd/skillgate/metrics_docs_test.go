package main

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// documentedMetrics reads the metric names of the table in
// docs/operations.md#metrics. A cell may name several: "`skillgate_sandbox_workers`,
// `_running`" is skillgate_sandbox_workers and skillgate_sandbox_running.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../docs/operations.md")
	require.NoError(t, err)
	defer f.Close()
	name := regexp.MustCompile("`(skillgate_[a-z_]+|_[a-z_]+)`")
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `skillgate_") {
			continue
		}
		first := strings.Split(line, "|")[1]
		prefix := ""
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			n := m[1]
			if strings.HasPrefix(n, "_") {
				n = prefix + n
			} else {
				prefix = "skillgate_" + strings.SplitN(n, "_", 3)[1]
			}
			out = append(out, n)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// Every metric docs/operations.md documents is exposed by a gateway that
// has just started, before any event it counts: dashboards and alerts
// (rate(), absent()) see every series from the start.
func TestDocumentedMetricsExposedAtStart(t *testing.T) {
	documented := documentedMetrics(t)
	require.GreaterOrEqual(t, len(documented), 40, "the table was read: %v", documented)
	g := startGateway(t, "--skills-dir", exampleSkills(t), "--tls-listen", "")
	exposed := map[string]bool{}
	for _, line := range strings.Split(scrape(t, "http://"+g.addrs["metrics"]+"/metrics"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n := strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if h, ok := strings.CutSuffix(n, suffix); ok {
				exposed[h] = true
			}
		}
		exposed[n] = true
	}
	for _, n := range documented {
		assert.True(t, exposed[n], "%s is documented but not exposed at start", n)
	}
}
