package dispatch

import (
	"github.com/skillgate/skillgate/egress"
	"github.com/skillgate/skillgate/egress/hostpattern"
	"github.com/skillgate/skillgate/sandbox"
)

// Egress is the operator's side of runs' network access.
type Egress struct {
	// Proxy relays and filters every connection.
	Proxy *egress.Proxy
	// Allow caps what any run may reach (--egress-allow); Deny refuses
	// what it matches (--egress-deny); Private lets special addresses
	// through (--egress-allow-private).
	Allow   []hostpattern.Pattern
	Deny    []hostpattern.Pattern
	Private []egress.PrivateRule
	// OpenRunCode is what run_code may reach on a gateway without auth
	// file (--run-code-network); with one, each identity's
	// run_code_network says.
	OpenRunCode []hostpattern.Pattern
}

// runEgress returns the run's egress, or nil for no network: a skill gets
// the intersection of its own network list, the operator's and its
// caller's (when the caller's entry narrows it); run_code gets its
// caller's run_code network, capped by the operator. Skills mounted into
// run_code bring none of theirs.
func (d *Dispatcher) runEgress(call *Call, req *runRequest, runID string) sandbox.Egress {
	e := d.opts.Egress
	if e == nil || e.Proxy == nil {
		return nil
	}
	layers := [][]hostpattern.Pattern{e.Allow}
	info := egress.RunInfo{RunID: runID, Identity: call.Identity.Name()}
	if req.kind == MethodRunCode {
		own := e.OpenRunCode
		if !call.Identity.IsAnonymous() {
			own = parsePatterns(call.Identity.RunCodeNetwork())
		}
		layers = append(layers, own)
	} else {
		info.Skill = req.label
		layers = append(layers, parsePatterns(req.network))
		if narrow, ok := call.Identity.Network(); ok {
			layers = append(layers, parsePatterns(narrow))
		}
	}
	pol := &egress.Policy{Allow: layers, Deny: e.Deny, Private: e.Private}
	if !pol.Enabled() {
		return nil
	}
	return e.Proxy.ForRun(info, pol)
}

// parsePatterns parses patterns validated when they were loaded; one that
// fails anyway is left out, which can only narrow.
func parsePatterns(list []string) []hostpattern.Pattern {
	out := make([]hostpattern.Pattern, 0, len(list))
	for _, s := range list {
		if p, err := hostpattern.Parse(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}
