package main

import "errors"

// Sentinel errors of the tool.
var (
	errBadSize      = errors.New("bad size")
	errBadParams    = errors.New("params must be a JSON object")
	errUsage        = errors.New("usage")
	errInitFailed   = errors.New("initialization failed")
	errConnClosed   = errors.New("connection closed by the server")
	errNotReady     = errors.New("server did not become ready")
	errNoConns      = errors.New("no connection could be established")
	errBadResponse  = errors.New("unexpected message from the server")
	errDrainTimeout = errors.New("responses still outstanding at the drain deadline")
)
