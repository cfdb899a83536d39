package runs

import (
	"encoding/json"
	"time"
)

// Run statuses: a run is running until it finishes completed or failed.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Event types of run_event.
const (
	EventStarted  = "started"
	EventLog      = "log"
	EventProgress = "progress"
	EventBlob     = "blob"
	EventGap      = "gap"
	EventFinished = "finished"
)

// Event is one numbered event of a run. Seq counts 1, 2, 3… per run with
// no holes; a gap event, which stands for the events it replaces, carries
// the seq of the last of them (to_seq).
type Event struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"` // the type's own fields, a JSON object
}

// Record is what a Store keeps of a run.
type Record struct {
	ID         string          `json:"run_id"`
	Owner      string          `json:"owner"`
	What       string          `json:"what"`
	RequestID  string          `json:"request_id,omitempty"`
	Status     string          `json:"status"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at,omitzero"`
	Progress   json.RawMessage `json:"progress,omitempty"`
	// Updated is when the record was last saved: a running record that
	// stops being updated belongs to a replica that is gone.
	Updated time.Time `json:"updated_at,omitzero"`
	// Result is the final run object, as the call answered it.
	Result json.RawMessage `json:"result,omitempty"`
	// Events are the retained events, oldest first, ending with finished.
	Events []Event `json:"events,omitempty"`
	// Size is the bytes the store keeps for the record: set by Save and
	// by LoadAll, 0 when the store does not tell. Not stored.
	Size int64 `json:"-"`
}

// durationMS is how long the run took, or has taken so far.
func (r *Record) durationMS(now time.Time) int64 {
	end := r.FinishedAt
	if end.IsZero() {
		end = now
	}
	return end.Sub(r.StartedAt).Milliseconds()
}
