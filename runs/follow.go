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
// behind. Whenever pressed reports true, what is still to be sent is
// compacted (see compact): progress keeps only the latest, each stream's
// log text only its newest maxLogEventJSON encoded bytes, merged into one event where
// they are adjacent, and gap events name what was dropped. Dropped events
// stay retained for watch_run. pressed is asked before each event of an
// uncompacted batch, so a follower that falls behind mid-batch compacts
// the rest together with whatever was appended meanwhile.
func (r *Run) FollowCompacting(ctx context.Context, after uint64, pressed func() bool, send func(Event) error) error {
	for {
		batch, wake, finished := r.since(after)
		compacted := false
		if pressed != nil && len(batch) > 1 && pressed() {
			batch, compacted = compact(batch), true
		}
		sent := 0
		for ; sent < len(batch); sent++ {
			if sent > 0 && !compacted && pressed != nil && pressed() {
				break // fetch again and compact what is left
			}
			if err := send(batch[sent]); err != nil {
				return err
			}
			after = batch[sent].Seq
		}
		switch {
		case sent < len(batch):
			continue
		case finished:
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
	if len(evs) > 0 && firstSeq(evs[0]) > after+1 {
		out = append(out, gapEvent(after+1, firstSeq(evs[0])-1))
	}
	for i := range evs {
		switch {
		case evs[i].Seq <= after:
		case evs[i].Type == EventGap && gapFrom(evs[i]) <= after:
			// Logs dropped after this follower sent some of them: the
			// gap names only what it has not seen.
			out = append(out, gapEvent(after+1, evs[i].Seq))
		default:
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

// firstSeq is the first seq an event accounts for: a gap's from_seq (a
// gap of dropped logs may be the first event retained), else its own.
func firstSeq(ev Event) uint64 {
	if ev.Type == EventGap {
		if from := gapFrom(ev); from != 0 {
			return from
		}
	}
	return ev.Seq
}

// gapFrom is a gap event's from_seq.
func gapFrom(ev Event) uint64 {
	var g struct {
		From uint64 `json:"from_seq"`
	}
	_ = json.Unmarshal(ev.Data, &g)
	return g.From
}
