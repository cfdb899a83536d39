package runs

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Run is one run of the registry, live or finished.
//
// Locking: every field below mu is guarded by it. Events are appended by
// the run's producer (the sandbox observer and the execution method) and
// read by any number of followers; wake is closed and replaced on every
// append, so followers wait without polling.
type Run struct {
	reg    *Registry
	cancel context.CancelCauseFunc // nil for runs loaded from the store

	mu       sync.Mutex
	rec      Record
	retained int           // bytes of rec.Events, as weighed
	weights  []int         // what each of rec.Events counts in retained
	nextSeq  uint64        // seq of the next event
	wake     chan struct{} // closed when an event is appended
	done     chan struct{} // closed when the run finishes
	logs     coalescer
	fullLogs []byte // everything the run wrote, up to the registry's cap

	shared sharedRun
}

// ID returns the run's id.
func (r *Run) ID() string { return r.rec.ID }

// Owner returns the identity the run belongs to.
func (r *Run) Owner() string { return r.rec.Owner }

// Done is closed when the run has finished.
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel asks the run to stop: its context is canceled with ErrCanceled,
// or, for a run in progress on another replica, that replica is asked
// through the shared store to cancel it. Cancelling a finished run does
// nothing.
func (r *Run) Cancel() {
	switch {
	case r.cancel != nil:
		r.cancel(ErrCanceled)
	case r.shared.remote && !r.isDone():
		r.requestCancel()
	}
}

// Started appends the started event.
func (r *Run) Started(queued time.Duration) {
	r.emit(EventStarted, map[string]any{"what": r.rec.What, "queued_ms": queued.Milliseconds()})
}

// Blob appends a blob event for an output blob the run stored.
func (r *Run) Blob(id, kind string, size int64) {
	r.emit(EventBlob, map[string]any{"blob_id": id, "kind": kind, "size_bytes": size})
}

// emit appends one event now, after any coalesced output still pending.
func (r *Run) emit(typ string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		return // the package's own maps always encode
	}
	r.mu.Lock()
	r.flushLocked()
	r.appendLocked(typ, raw)
	r.mu.Unlock()
}

// appendLocked numbers an event, retains it within the registry's bounds
// and wakes the followers.
func (r *Run) appendLocked(typ string, data json.RawMessage) {
	r.appendWeighedLocked(typ, data, len(data))
}

// appendWeighedLocked is appendLocked for an event that counts weight
// bytes against the retention bound rather than its JSON's size: a log
// event counts the bytes the run wrote, so that the bound, sized for the
// sandbox's log cap, keeps a run's whole log however JSON escapes it.
func (r *Run) appendWeighedLocked(typ string, data json.RawMessage, weight int) {
	if r.rec.Status != StatusRunning {
		return // nothing follows finished
	}
	r.alignWeightsLocked()
	r.nextSeq++
	r.rec.Events = append(r.rec.Events, Event{Seq: r.nextSeq, Type: typ, Data: data})
	r.weights = append(r.weights, weight+eventOverhead)
	r.retained += weight + eventOverhead
	limits := r.reg.cfg
	for len(r.rec.Events) > 1 && (len(r.rec.Events) > limits.MaxEvents || r.retained > limits.MaxEventBytes) {
		r.retained -= r.weights[0]
		r.rec.Events[0] = Event{}
		r.rec.Events, r.weights = r.rec.Events[1:], r.weights[1:]
	}
	close(r.wake)
	r.wake = make(chan struct{})
}

// alignWeightsLocked weighs events the run did not append itself (a
// record loaded from a store) by their JSON.
func (r *Run) alignWeightsLocked() {
	if len(r.weights) == len(r.rec.Events) {
		return
	}
	r.weights, r.retained = r.weights[:0], 0
	for _, ev := range r.rec.Events {
		r.weights = append(r.weights, len(ev.Data)+eventOverhead)
		r.retained += len(ev.Data) + eventOverhead
	}
}

// eventOverhead approximates an event's fields other than its data.
const eventOverhead = 64

// Finish ends the run: pending output is flushed, finished is appended
// with status, and result (the run object) is what get_run answers from
// now on. Only the first call counts.
func (r *Run) Finish(status string, result json.RawMessage) {
	raw, _ := json.Marshal(map[string]string{"status": status})
	r.mu.Lock()
	if r.rec.Status != StatusRunning {
		r.mu.Unlock()
		return
	}
	r.logs.stop()
	r.flushLocked()
	r.appendLocked(EventFinished, raw)
	r.rec.Status, r.rec.Result, r.rec.FinishedAt = status, result, r.reg.now()
	r.fullLogs = nil // wanted only until the run object is made (logs_blob)
	rec := r.snapshotLocked()
	r.mu.Unlock()
	// Saved before done closes: whoever learns that the run finished
	// (a waiter, a replica reading the store, a draining gateway about
	// to exit) finds its record saved.
	r.reg.finished(r, rec)
	close(r.done)
	if r.cancel != nil {
		r.cancel(nil) // releases the context's resources
	}
}

// DropLogs removes the log events retained so far, each run of them
// replaced by one gap event, before the run finishes. A run's full logs
// are kept in its record only as long as they are also counted against
// its identity's blob quota (its logs_blob): when that refuses them, the
// record keeps the run object's preview and no more.
func (r *Run) DropLogs() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec.Status != StatusRunning {
		return
	}
	r.flushLocked()
	evs := r.rec.Events
	out := make([]Event, 0, len(evs))
	var from uint64
	for i, ev := range evs {
		if ev.Type != EventLog {
			out = append(out, ev)
			continue
		}
		if from == 0 {
			from = ev.Seq
		}
		if i+1 == len(evs) || evs[i+1].Type != EventLog {
			out = append(out, gapEvent(from, ev.Seq))
			from = 0
		}
	}
	r.rec.Events, r.weights, r.retained = out, nil, 0
	r.alignWeightsLocked()
	close(r.wake)
	r.wake = make(chan struct{})
}

// FullLogs returns everything the run wrote to its streams, as one text
// in the order it came, up to
// the registry's log cap, until the run finishes (then nil).
func (r *Run) FullLogs() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fullLogs
}

// snapshotLocked copies the record for a store or a reader.
func (r *Run) snapshotLocked() *Record {
	rec := r.rec
	rec.Events = append([]Event(nil), r.rec.Events...)
	return &rec
}

// Record returns a copy of the run's record.
func (r *Run) Record() *Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

// Object is what get_run answers: the final run object once finished,
// else the run's status, start time and latest progress.
func (r *Run) Object() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec.Status != StatusRunning {
		return r.rec.Result
	}
	obj, _ := json.Marshal(struct {
		ID        string          `json:"run_id"`
		Status    string          `json:"status"`
		What      string          `json:"what"`
		StartedAt time.Time       `json:"started_at"`
		Progress  json.RawMessage `json:"progress"`
	}{r.rec.ID, r.rec.Status, r.rec.What, r.rec.StartedAt, nullIfEmpty(r.rec.Progress)})
	return obj
}

func nullIfEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// Wait blocks until the run finishes or ctx ends.
func (r *Run) Wait(ctx context.Context) error {
	for {
		select {
		case <-r.done:
			return nil
		case <-r.remotePoll():
			r.refresh(ctx)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
