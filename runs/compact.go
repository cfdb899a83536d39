package runs

import (
	"encoding/json"
	"strings"
)

// compact shrinks a batch for a follower that is behind. Kept whole:
// started, blob, gap and finished events, the latest progress, and per
// stream the newest log events whose text fits maxLogEventJSON once
// encoded (at least the
// newest one). Adjacent kept log events of one stream, with nothing but
// dropped progress between them, become one log event whose from_seq
// names the first seq it stands for. Every other run of dropped events
// becomes one gap event. The client still sees every seq accounted for:
// each event follows the previous one's seq, or starts at its from_seq.
func compact(batch []Event) []Event {
	logs := decodeLogs(batch)
	drop := dropped(batch, logs)
	out := make([]Event, 0, len(batch))
	var gapFrom uint64 // first seq of the pending run of dropped events; 0: none
	for i := 0; i < len(batch); {
		if drop[i] {
			if gapFrom == 0 {
				gapFrom = batch[i].Seq
			}
			i++
			continue
		}
		if gapFrom != 0 {
			out = append(out, gapEvent(gapFrom, batch[i].Seq-1))
			gapFrom = 0
		}
		ev, next := mergeLogs(batch, logs, drop, i)
		out = append(out, ev)
		i = next
	}
	if gapFrom != 0 {
		out = append(out, gapEvent(gapFrom, batch[len(batch)-1].Seq))
	}
	return out
}

// logFields are a log event's members.
type logFields struct {
	Stream  string `json:"stream"`
	Text    string `json:"text"`
	FromSeq uint64 `json:"from_seq,omitempty"`
}

// decodeLogs decodes the batch's log events; other entries stay nil.
func decodeLogs(batch []Event) []*logFields {
	logs := make([]*logFields, len(batch))
	for i, ev := range batch {
		if ev.Type != EventLog {
			continue
		}
		var f logFields
		if json.Unmarshal(ev.Data, &f) == nil {
			logs[i] = &f
		}
	}
	return logs
}

// dropped marks the superseded progress events and, per stream, the log
// events older than the newest maxLogEventJSON bytes of encoded text.
func dropped(batch []Event, logs []*logFields) []bool {
	drop := make([]bool, len(batch))
	latestProgress := false
	kept := map[string]int{} // bytes of text kept per stream
	for i := len(batch) - 1; i >= 0; i-- {
		switch {
		case batch[i].Type == EventProgress:
			drop[i] = latestProgress
			latestProgress = true
		case logs[i] != nil:
			n, seen := kept[logs[i].Stream]
			cost := jsonTextCost([]byte(logs[i].Text))
			drop[i] = seen && n+cost > maxLogEventJSON
			if !drop[i] {
				kept[logs[i].Stream] = n + cost
			}
		}
	}
	return drop
}

// mergeLogs returns the event that batch[i] (kept) becomes and the index
// after what it stands for: a log event absorbs the kept log events of its
// stream that follow it with only dropped progress between.
func mergeLogs(batch []Event, logs []*logFields, drop []bool, i int) (Event, int) {
	first := logs[i]
	if first == nil {
		return batch[i], i + 1
	}
	var text strings.Builder
	text.WriteString(first.Text)
	last, merged := i, false
	for j := i + 1; j < len(batch); j++ {
		if drop[j] && batch[j].Type == EventProgress {
			continue
		}
		if drop[j] || logs[j] == nil || logs[j].Stream != first.Stream {
			break
		}
		text.WriteString(logs[j].Text)
		last, merged = j, true
	}
	if !merged {
		return batch[i], i + 1
	}
	from := batch[i].Seq
	if first.FromSeq != 0 {
		from = first.FromSeq
	}
	raw, _ := json.Marshal(logFields{Stream: first.Stream, Text: text.String(), FromSeq: from})
	return Event{Seq: batch[last].Seq, Type: EventLog, Data: raw}, last + 1
}
