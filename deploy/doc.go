// Package deploy holds what it takes to run skillgate in production, and the
// tests that keep it honest. It has no Go API; the files are the product:
//
//	container/   Containerfile: multi-stage build, Debian slim with python3
//	kubernetes/  Deployment, Services, ConfigMap, Secrets, PodDisruptionBudget,
//	             ServiceMonitor and PrometheusRule, tied by kustomization.yaml
//	systemd/     a hardened unit and its environment file
//	config/      an example config file with every flag of "skillgate serve"
//	prometheus/  alert and recording rules with promtool unit tests, and an
//	             example scrape configuration
//	grafana/     a dashboard over every metric the gateway exports
//
// The tests build cmd/skillgate and compare the manifests with the binary
// itself: every flag a manifest sets must be one that "skillgate serve
// --help" lists, the example config must name every flag, ports and probe
// paths must match what the running gateway serves, and every metric the
// rules and the dashboard query must be one the gateway registers. With the
// Debian package prometheus installed they also run promtool on the rules
// and scrape a live gateway with a real Prometheus server; without it those
// tests skip, unless SKILLGATE_REQUIRE_PROMETHEUS=1 (as in CI) makes them
// fail. kubernetes/prometheusrule.yaml is generated from prometheus/*.yml:
// after editing the rules run
//
//	go test ./deploy -run TestPrometheusRuleInSync -update
package deploy
