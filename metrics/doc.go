// Package metrics defines the gateway's Prometheus collectors and the
// operations HTTP handler (/metrics, /healthz, /readyz). It is a leaf: other
// packages receive a *Metrics by injection and never register globals.
package metrics
