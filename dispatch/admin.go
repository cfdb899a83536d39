package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
)

// MethodGatewayStatus reports the gateway's load for its operators.
const MethodGatewayStatus = "gateway_status"

// errNotAdmin is why a non-admin caller may not use an operator's view.
var errNotAdmin = fmt.Errorf("%w: only admin-class identities may", auth.ErrPermissionDenied)

// isAdmin reports whether the caller operates the gateway: an identity of
// class admin, or the anonymous identity of an open gateway, which every
// client is (its runs are all anonymous's anyway, and it may call every
// method). The class still grants no method: gateway_status must be in
// the identity's methods like any other.
func isAdmin(call *Call) bool {
	return call.Identity.Class() == auth.ClassAdmin || call.Identity.IsAnonymous()
}

// adminGroup is the operators' methods.
func (d *Dispatcher) adminGroup() methodGroup {
	return methodGroup{methods: []groupMethod{
		{name: MethodGatewayStatus, aliases: []string{"GatewayStatus"}, fn: d.gatewayStatus},
	}}
}

// GatewayStatus is the result of gateway_status: what the gateway is
// doing now, read from the components that own it rather than from the
// metrics, in one answer (docs/console.md#gateway).
type GatewayStatus struct {
	Server ServerStatus `json:"server"`
	// Connections are what is open now, by front door: "framed" (TCP and
	// TLS connections), "mcp" (MCP sessions); the fronts that cmd serves.
	Connections map[string]int `json:"connections"`
	// Requests are the calls in flight, by front door ("framed", "http",
	// "mcp").
	Requests map[string]int64 `json:"requests_in_flight"`
	Runs     RunsStatus       `json:"runs"`
	// Sandbox is null where code execution is off or unavailable; then
	// SandboxUnavailable says why.
	Sandbox            *SandboxStatus `json:"sandbox"`
	SandboxUnavailable string         `json:"sandbox_unavailable,omitempty"`
	Blobs              BlobsStatus    `json:"blobs"`
}

// ServerStatus names the gateway.
type ServerStatus struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"started_at"`
}

// RunsStatus counts the runs of this replica.
type RunsStatus struct {
	InFlight int `json:"in_flight"` // holding a sandbox worker
	Queued   int `json:"queued"`    // waiting for one
}

// SandboxStatus is the sandbox pool.
type SandboxStatus struct {
	Workers          int   `json:"workers"`    // runs executed at once
	WarmReady        int   `json:"warm_ready"` // pre-started sandboxes ready for a run
	Starting         int   `json:"starting"`   // sandbox starts under way
	Templates        bool  `json:"templates"`  // sandboxes are forked from a template process
	TemplateRestarts int   `json:"template_restarts"`
	WarmSandboxBytes int64 `json:"warm_sandbox_bytes"` // memory of one warm sandbox, measured at start-up
	// The templates running: one per Python environment in use.
	TemplatesRunning int   `json:"templates_running"`
	TemplateBytes    int64 `json:"template_bytes"` // their memory together
}

// BlobsStatus is the blob store's use.
type BlobsStatus struct {
	Count      int   `json:"count"`
	Bytes      int64 `json:"bytes"`
	QuotaBytes int64 `json:"quota_bytes"` // --max-blob-store-bytes; 0: none
}

// sandboxStats is what *sandbox.Runner reports beyond Run; a Runner
// without it (a test's fake) leaves the sandbox section out.
type sandboxStats interface {
	Stats() sandbox.Stats
	UsesTemplate() bool
	TemplateRestarts() int
	WarmSandboxBytes() int64
	Templates() sandbox.TemplateStats
}

// callsInFlight counts the calls in flight at each front door, for
// gateway_status.
func (d *Dispatcher) callsInFlight() map[string]int64 {
	out := map[string]int64{}
	d.fronts.each(func(f *Front) { out[f.name] = f.active.Load() })
	return out
}

func (d *Dispatcher) gatewayStatus(_ context.Context, call *Call) (any, error) {
	if !isAdmin(call) {
		return nil, fmt.Errorf("%w call %s", errNotAdmin, MethodGatewayStatus)
	}
	st := &GatewayStatus{
		Server:      ServerStatus{Name: d.opts.Info.Name, Version: d.opts.Info.Version, StartedAt: d.started},
		Connections: map[string]int{},
		Requests:    d.callsInFlight(),
		Blobs:       BlobsStatus{QuotaBytes: d.opts.Status.BlobQuotaBytes},
	}
	// This very call is in flight: it is not load, so it is not shown.
	st.Requests[call.Front]--
	if d.opts.Blobs != nil {
		st.Blobs.Count, st.Blobs.Bytes = d.opts.Blobs.Usage()
	}
	if s, ok := d.opts.Runner.(sandboxStats); ok {
		stats := s.Stats()
		st.Runs = RunsStatus{InFlight: stats.Running, Queued: stats.Queued}
		tmpl := s.Templates()
		st.Sandbox = &SandboxStatus{Workers: d.opts.Status.SandboxWorkers, WarmReady: stats.WarmReady, Starting: stats.Starting,
			Templates: s.UsesTemplate(), TemplateRestarts: s.TemplateRestarts(), WarmSandboxBytes: s.WarmSandboxBytes(),
			TemplatesRunning: tmpl.Count, TemplateBytes: tmpl.Bytes}
	} else if d.opts.Runner == nil {
		st.SandboxUnavailable = d.opts.RunnerUnavailable
	}
	if d.opts.Status.Connections != nil {
		d.opts.Status.Connections(st.Connections)
	}
	return st, nil
}

// StatusOptions are what gateway_status reports that the Dispatcher does
// not own; cmd fills them.
type StatusOptions struct {
	// Connections adds the connections open at each front door to the
	// map; called for every gateway_status call, from any goroutine.
	Connections    func(map[string]int)
	SandboxWorkers int
	BlobQuotaBytes int64
}

// runOwner is whose run the caller asks for: its own, or, for an admin,
// whoever's run id is on this replica.
func (d *Dispatcher) runOwner(call *Call, id string) string {
	if isAdmin(call) {
		if owner, ok := d.opts.Runs.Owner(id); ok {
			return owner
		}
	}
	return blobOwner(call)
}

// listOwner is whose runs list_runs lists: all_identities asks, for an
// admin, for every identity's.
func listOwner(call *Call, all bool) (string, error) {
	if !all {
		return blobOwner(call), nil
	}
	if !isAdmin(call) {
		return "", fmt.Errorf("%w list every identity's runs (all_identities)", errNotAdmin)
	}
	return runs.AllOwners, nil
}
