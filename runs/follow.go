package runs

import (
	"context"
	"encoding/json"
)

// Follow hands send every event with seq > after, in order, then every
// event appended later, until it has sent finished (it returns nil), send
// fails or ctx ends. Events no longer retained are replaced by one gap
// event. send may block: that slows this follower alone, never the run.
func (r *Run) Follow(ctx context.Context, after uint64, send func(Event) error) error {
	return r.FollowCompacting(ctx, after, nil, send)
}

// FollowCompacting is Follow for a follower whose connection may fall
// behind: while pressed reports true, a progress event that a later one in
// the same batch supersedes is not sent, and a gap event names each run of
// such dropped seqs. The dropped events stay retained for watch_run.
func (r *Run) FollowCompacting(ctx context.Context, after uint64, pressed func() bool, send func(Event) error) error {
	for {
		batch, wake, finished := r.since(after)
		if pressed != nil && len(batch) > 1 && pressed() {
			batch = compact(batch)
		}
		for _, ev := range batch {
			if err := send(ev); err != nil {
				return err
			}
			after = ev.Seq
		}
		if finished {
			return nil
		}
		select {
		case <-wake:
		case <-r.remotePoll():
			r.refresh(ctx)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// since returns the events after seq after (a gap first when some are no
// longer retained), a channel closed on the next append, and whether the
// batch ends the stream.
func (r *Run) since(after uint64) ([]Event, <-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.rec.Events
	var out []Event
	if len(evs) > 0 && evs[0].Seq > after+1 {
		out = append(out, gapEvent(after+1, evs[0].Seq-1))
	}
	for i := range evs {
		if evs[i].Seq > after {
			out = append(out, evs[i])
		}
	}
	finished := r.rec.Status != StatusRunning && (len(out) > 0 || after >= r.nextSeq)
	return out, r.wake, finished
}

func gapEvent(from, to uint64) Event {
	raw, _ := json.Marshal(map[string]uint64{"from_seq": from, "to_seq": to})
	return Event{Seq: to, Type: EventGap, Data: raw}
}

// compact drops the progress events of batch that a later progress event
// of batch supersedes, putting one gap event in the place of each run of
// consecutive dropped seqs.
func compact(batch []Event) []Event {
	last := -1
	for i, ev := range batch {
		if ev.Type == EventProgress {
			last = i
		}
	}
	out := make([]Event, 0, len(batch))
	var from uint64 // first seq of the run of dropped events; 0: none
	for i, ev := range batch {
		if ev.Type == EventProgress && i < last {
			if from == 0 {
				from = ev.Seq
			}
			if i+1 < len(batch) && batch[i+1].Type == EventProgress && batch[i+1].Seq == ev.Seq+1 && i+1 < last {
				continue
			}
			out = append(out, gapEvent(from, ev.Seq))
			from = 0
			continue
		}
		out = append(out, ev)
	}
	return out
}
