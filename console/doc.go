// Package console serves the run console: a browser page at /console/ on
// the HTTP listener that shows runs, skills and the gateway's load. It is
// static files only, embedded in the binary; the page calls POST /rpc
// like any other client, with a token it keeps in the tab, so every
// request meets the same authentication, policies, limits and Origin and
// Host checks as /rpc. Nothing here decides who may see what.
package console
