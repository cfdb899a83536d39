// Command skillgate-bench drives framed JSON-RPC servers with load and
// measures them.
//
//	skillgate-bench load    drive a server over N connections with D requests in flight each
//	skillgate-bench idle    hold N idle initialized connections and report the server's memory per connection
//	skillgate-bench compare run the same load against the gateway, the ceiling and the two peer
//	                        libraries, alternating, and print one table of ratios
//	skillgate-bench soak    start a gateway with a data dir and drive framed, HTTP and MCP
//	                        clients at a steady mixed load (runs, blobs, uploads, MCP
//	                        sessions) for a long time: a table of its RSS, goroutines, open
//	                        fds and data dir over time, and a verdict per series (the
//	                        least-squares growth after a warm-up against a tolerance);
//	                        it fails when one grows (make soak DURATION=30m)
//
// Every request id is a string "pt-<seq>-<slot>"; the tool answers the
// server's _Keepalive requests on every connection. Results are printed as
// Markdown tables. The comparison servers live in the separate module under
// bench/, so that they never become dependencies of the gateway; compare
// builds them (and the gateway) into bin/bench/.
package main
