package session

import "errors"

// Sentinel errors of the package.
var (
	// ErrClosed matches the error of every call on a closed connection.
	ErrClosed = errors.New("connection closed")
	// ErrServerClosed is returned by Serve after Shutdown or Close.
	ErrServerClosed = errors.New("server closed")
)
