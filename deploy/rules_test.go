package deploy_test

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/skillgate/skillgate/metrics"
)

var update = flag.Bool("update", false, "rewrite generated files (kubernetes/prometheusrule.yaml)")

const (
	alertsPath         = "prometheus/alerts.yml"
	recordingPath      = "prometheus/recording.yml"
	alertTestsPath     = "prometheus/alerts_test.yml"
	recordingTestsPath = "prometheus/recording_test.yml"
	prometheusRulePath = "kubernetes/prometheusrule.yaml"
	dashboardPath      = "grafana/skillgate.json"
)

type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Alert       string            `yaml:"alert,omitempty"`
	Record      string            `yaml:"record,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// promtoolTests is the part of a promtool test file the coverage check reads.
type promtoolTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			EvalTime  string           `yaml:"eval_time"`
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func loadRules(t testing.TB, path string) ruleFile {
	t.Helper()
	var rf ruleFile
	loadYAML(t, path, &rf)
	require.NotEmpty(t, rf.Groups, path)
	return rf
}

func alertRules(t testing.TB) []rule {
	var out []rule
	for _, g := range loadRules(t, alertsPath).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// TestAlertRulesAreDocumented: every alert carries what an on-call person
// needs and a severity the routing understands.
func TestAlertRulesAreDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range alertRules(t) {
		assert.False(t, seen[r.Alert], "duplicate alert %s", r.Alert)
		seen[r.Alert] = true
		assert.True(t, strings.HasPrefix(r.Alert, "Skillgate"), r.Alert)
		assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "%s severity", r.Alert)
		assert.NotEmpty(t, r.Annotations["summary"], "%s summary", r.Alert)
		assert.Greater(t, len(r.Annotations["description"]), 80, "%s description should say what to do", r.Alert)
	}
	assert.NotEmpty(t, seen)
}

// TestEveryAlertIsUnitTested: alerts_test.yml shows each alert both firing
// and quiet.
func TestEveryAlertIsUnitTested(t *testing.T) {
	var pt promtoolTests
	loadYAML(t, alertTestsPath, &pt)
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tg := range pt.Tests {
		for _, at := range tg.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				firing[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	for _, r := range alertRules(t) {
		assert.True(t, firing[r.Alert], "%s has no test where it fires", r.Alert)
		assert.True(t, quiet[r.Alert], "%s has no test where it stays quiet", r.Alert)
	}
}

// TestPromtool runs promtool's own checks and the unit tests.
func TestPromtool(t *testing.T) {
	promtool := requirePrometheusTool(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "alerts.yml", "recording.yml"},
		{"test", "rules", "alerts_test.yml", "recording_test.yml"},
		{"check", "config", "prometheus.example.yml"},
	} {
		t.Run(strings.Join(args[:2], "_"), func(t *testing.T) {
			out, err := runIn("prometheus", promtool, args...)
			assert.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		})
	}
}

// TestPrometheusRuleInSync: kubernetes/prometheusrule.yaml carries exactly
// the groups of prometheus/alerts.yml and recording.yml. Regenerate it with
// -update after editing those.
func TestPrometheusRuleInSync(t *testing.T) {
	want := renderPrometheusRule(t)
	if *update {
		require.NoError(t, os.WriteFile(prometheusRulePath, want, 0o644))
	}
	got, err := os.ReadFile(prometheusRulePath)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got),
		"%s is stale: run go test ./deploy -run TestPrometheusRuleInSync -update", prometheusRulePath)
}

const prometheusRuleHeader = `# Generated from deploy/prometheus/alerts.yml and recording.yml; do not edit.
# Regenerate: go test ./deploy -run TestPrometheusRuleInSync -update
# Add the label your Prometheus' ruleSelector expects (often "release").
`

func renderPrometheusRule(t *testing.T) []byte {
	groups := append(loadRules(t, alertsPath).Groups, loadRules(t, recordingPath).Groups...)
	obj := struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   objectMeta `yaml:"metadata"`
		Spec       ruleFile   `yaml:"spec"`
	}{
		APIVersion: "monitoring.coreos.com/v1",
		Kind:       "PrometheusRule",
		Metadata:   objectMeta{Name: "skillgate", Labels: map[string]string{"app.kubernetes.io/name": "skillgate"}},
		Spec:       ruleFile{Groups: groups},
	}
	var buf bytes.Buffer
	buf.WriteString(prometheusRuleHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	require.NoError(t, enc.Encode(obj))
	require.NoError(t, enc.Close())
	return buf.Bytes()
}

// metricRefRE finds metric names in PromQL; a name after ':' is part of a
// recording rule's name, not a metric.
var metricRefRE = regexp.MustCompile(`(?:^|[^:\w])((?:skillgate|process|go)_[a-z0-9_]+)`)

// TestQueriedMetricsExist: every metric the rules and the dashboard query
// is one the gateway registers, so that a rename cannot silently blank a
// panel or disarm an alert.
func TestQueriedMetricsExist(t *testing.T) {
	known := knownMetrics(t)
	unknown := map[string][]string{}
	for where, expr := range queriedExprs(t) {
		for _, m := range metricRefRE.FindAllStringSubmatch(expr, -1) {
			if name := m[1]; !known[name] && !known[histogramBase(name)] {
				unknown[name] = append(unknown[name], where)
			}
		}
	}
	var lines []string
	for name, where := range unknown {
		slices.Sort(where)
		lines = append(lines, name+" ("+strings.Join(where, ", ")+")")
	}
	slices.Sort(lines)
	if len(lines) > 0 {
		t.Errorf("queried metrics the gateway does not register:\n  %s", strings.Join(lines, "\n  "))
	}
}

func histogramBase(name string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, s); ok {
			return b
		}
	}
	return name
}

// queriedExprs maps a place ("alerts.yml SkillgateX") to its PromQL.
func queriedExprs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, path := range []string{alertsPath, recordingPath} {
		for _, g := range loadRules(t, path).Groups {
			for _, r := range g.Rules {
				out[path+" "+r.Alert+r.Record] = r.Expr
			}
		}
	}
	for where, expr := range dashboardExprs(t, loadDashboard(t)) {
		out[dashboardPath+" "+where] = expr
	}
	return out
}

// knownMetrics is every metric name the gateway can export: what
// metrics.New registers (described, so that vectors without children count
// too) and whatever a running gateway exposes (gauges registered elsewhere).
func knownMetrics(t *testing.T) map[string]bool {
	known := map[string]bool{}
	for _, name := range collectorMetrics() {
		known[name] = true
	}
	g := startGateway(t)
	code, body := httpGet("http://" + g.addr("metrics") + metricsPath)
	require.Equal(t, 200, code, body)
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			known[f[2]] = true
		}
	}
	return known
}

// collectorMetrics names every metric metrics.New registers (vectors
// without children included), read from the registry's descriptions.
func collectorMetrics() []string {
	return describedNames(metrics.New("test").Registry)
}

var descNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

func describedNames(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := descNameRE.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}
