package sandbox

import (
	"maps"
	"net"
	"strconv"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// Egress serves the outgoing connections of one run. A Job with an Egress
// runs in a sandbox whose network namespace has loopback up and a listener
// on 127.0.0.1:EgressPort, which the gateway holds: Python (allowed by
// seccomp and Landlock to make TCP connections to that port only) reaches
// the outside world through it and nothing else. Without an Egress a run
// has no network at all, as before.
type Egress interface {
	// Serve accepts the run's connections from l until l is closed (the
	// sandbox closes it once the run's processes are killed), then closes
	// every connection it still holds and returns. note appends a line to
	// the run's logs; it is safe for concurrent use.
	Serve(l net.Listener, note func(line string))
}

// EgressPort is the proxy's port on the sandbox's loopback.
const EgressPort = wire.EgressPort

// proxyURL is what the run's proxy variables point at.
var proxyURL = "http://127.0.0.1:" + strconv.Itoa(EgressPort)

// proxyEnv are the variables urllib, requests, httpx, pip and curl read;
// the sandbox sets them for a run with network and refuses them in
// Job.Env.
var proxyEnv = map[string]string{
	"HTTP_PROXY": proxyURL, "HTTPS_PROXY": proxyURL, "ALL_PROXY": proxyURL,
	"http_proxy": proxyURL, "https_proxy": proxyURL, "all_proxy": proxyURL,
	"NO_PROXY": "", "no_proxy": "",
}

func init() {
	for k := range proxyEnv {
		reservedEnv[k] = true
	}
}

// withProxyEnv returns env plus the proxy variables.
func withProxyEnv(env map[string]string) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = make(map[string]string, len(proxyEnv))
	}
	maps.Copy(out, proxyEnv)
	return out
}
