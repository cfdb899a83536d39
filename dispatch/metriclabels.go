package dispatch

import (
	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/sandbox"
)

// presetMetrics creates, at zero, the series of the dispatcher's labelled
// metrics whose label values are known in advance, so that dashboards and
// alerts see them from the start rather than after their first event.
func presetMetrics(m *metrics.Metrics) {
	for _, front := range []string{metrics.FrontFramed, metrics.FrontHTTP, metrics.FrontMCP} {
		for _, r := range auth.Reasons() {
			m.AuthFailures.WithLabelValues(front, string(r))
		}
		for _, c := range auth.Classes() {
			m.RateLimited.WithLabelValues(front, string(c))
		}
		m.BudgetRefusals.WithLabelValues(front)
	}
	for _, kind := range []string{MethodExecuteSkill, MethodRunCode} {
		m.SandboxDuration.WithLabelValues(kind)
		m.SandboxRuns.WithLabelValues(kind, sandbox.StatusCompleted, "ok")
		m.SandboxRuns.WithLabelValues(kind, sandbox.StatusFailed, "exception")
		for _, reason := range runFailureReasons {
			m.SandboxRuns.WithLabelValues(kind, sandbox.StatusFailed, reason)
		}
	}
}
