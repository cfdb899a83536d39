package sandbox

// Stats is a snapshot of a Runner's load.
type Stats struct {
	Running   int // runs holding a worker (teardown included)
	Queued    int // runs waiting for a worker
	WarmReady int // pre-started sandboxes ready for a job
	Starting  int // sandbox starts under way (pool refill, or a run that found the pool empty)
}

// TemplateStats describe the Runner's templates.
type TemplateStats struct {
	Count int   // templates running, the warm pool's included
	Bytes int64 // their memory (proportional set sizes)
}
