// Package httpfront is the HTTP listener's front door: the stateless
// JSON-RPC 2.0 endpoint POST /rpc (batches, server-sent event streams for
// run events, the Skills Protocol's HTTP statuses), and what every
// endpoint of the listener shares: the guard against requests a browser
// can be tricked into sending (Origin, Host, Content-Type), the connection
// cap, the access log and the drain at shutdown. The MCP front door's
// /mcp is mounted on the same listener with Handle, behind the same guard.
//
// Every call goes through dispatch.Front, so identities, permissions,
// rate limits, logs and metrics (front="http") are those of the other
// front doors.
package httpfront
