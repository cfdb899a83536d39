package sandbox

// Stats is a snapshot of a Runner's load.
type Stats struct {
	Running   int // runs holding a worker (teardown included)
	Queued    int // runs waiting for a worker
	WarmReady int // pre-started sandboxes ready for a job
	// WarmSandboxBytes is the memory one warm sandbox takes (the sum of
	// its processes' proportional set sizes), measured at start-up.
	WarmSandboxBytes int64
	// TemplateRestarts counts sandbox templates that exited and were
	// replaced.
	TemplateRestarts int
}
