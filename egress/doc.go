// Package egress is the gateway's filtering proxy for the network traffic
// of sandboxed runs.
//
// A run that may use the network reaches the proxy through a listener in
// its own network namespace (the sandbox hands it to the gateway); nothing
// else leaves the namespace. The proxy speaks HTTP CONNECT (any TCP
// protocol, TLS end to end) and plain HTTP forwarding. It resolves names
// itself, checks the name and port against the run's Policy and every
// resolved address against the special-address rules (loopback, private,
// link-local, multicast, documentation, cloud metadata, the host's own
// addresses), then connects to exactly the address it checked, so a name
// that resolves differently a moment later cannot slip through. Refusals
// are a 403 whose body names the rule; an allowed destination that cannot
// be reached is a 502 in spec 004's ENDPOINT_UNREACHABLE shape.
//
// Every connection is logged, counted in metrics and bounded per run
// (concurrent connections, requests being read, header size, bytes each
// way with the headers, connect time).
package egress
