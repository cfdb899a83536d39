// Package runs keeps the live and finished runs of the gateway: each run's
// numbered event stream (started, log, progress, blob, gap, finished), its
// progress and final run object, who owns it, and how long it is kept.
//
// A Registry hands out Runs; the execution methods feed a Run from the
// sandbox's observer and finish it with the run object; the run methods
// (get_run, watch_run, cancel_run, list_runs) read it back. Finished runs
// are written to a Store (memory, or files in the data directory) and
// survive a restart; a run that was in progress when the gateway died is
// reported as interrupted. The registry keeps in memory the runs in
// progress and a small summary of each finished record, within Bounds;
// a finished run's events and run object are read from the store when
// asked for. With a SharedStore (runs/objstore keeps one in a blob
// store's objects), gateway replicas share the records: any replica
// answers for a run, finished or in progress elsewhere, and cancels it.
//
// The package knows nothing of connections or front doors: followers
// receive events through a send function that may block, which is how the
// callers apply their own backpressure.
package runs
