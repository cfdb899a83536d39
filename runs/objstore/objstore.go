// Package objstore keeps run records in the key/object space of a blob
// store (blob.Store.Objects), so that every gateway replica sharing the
// blobs shares the runs too: a runs.SharedStore on S3, or on the data
// folder of a single gateway.
//
// Each run has two objects under runs/<owner key>/<run id>/: "events",
// the retained events, and "record", everything else. A save writes the
// events first and the record last, so a reader that reads the record
// first and the events after never sees a finished record with older
// events. The owner key (a digest of the owner's name) puts an
// identity's runs under one prefix, which is what list_runs lists.
package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/runs"
)

const (
	prefix = "runs/"
	// cancelPrefix holds the cancel requests, one empty object per run,
	// named by run id: one listing finds them all, whoever runs them.
	cancelPrefix = "run-cancels/"
	recordName   = "record"
	eventsName   = "events"
	// maxRecordBytes bounds what a read takes of one object: the events
	// are bounded by the registry (2 MiB by default), with room to spare.
	maxRecordBytes = 64 << 20
	// listWorkers bounds the record reads of one List.
	listWorkers = 8
)

// Store is a runs.SharedStore on a blob store's objects. Safe for
// concurrent use.
type Store struct {
	obj blob.Objects

	mu     sync.Mutex
	owners map[string]string // running run id -> owner key, for Delete; guarded by mu
	saved  map[string]uint64 // running run id -> last event seq saved; guarded by mu
}

var _ runs.SharedStore = (*Store)(nil)

// New returns the run store kept in obj.
func New(obj blob.Objects) *Store {
	return &Store{obj: obj, owners: map[string]string{}, saved: map[string]uint64{}}
}

// ownerKey is a fixed-length key segment for an owner's name, which may
// hold characters an object key may not.
func ownerKey(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:16])
}

func runKey(ok, id, name string) string { return prefix + ok + "/" + id + "/" + name }

// Save implements runs.Store. The events are written only when they
// changed since this store last saved them.
func (s *Store) Save(ctx context.Context, rec *runs.Record) error {
	if !runs.ValidID(rec.ID) {
		return fmt.Errorf("runs: save %q: %w", rec.ID, runs.ErrNotFound)
	}
	ok := ownerKey(rec.Owner)
	var last uint64
	if n := len(rec.Events); n > 0 {
		last = rec.Events[n-1].Seq
	}
	s.mu.Lock()
	prev, known := s.saved[rec.ID]
	s.mu.Unlock()
	var size int64
	if !known || prev != last {
		n, err := s.putJSON(ctx, runKey(ok, rec.ID, eventsName), rec.Events)
		if err != nil {
			return err
		}
		size += n
	}
	head := *rec
	head.Events = nil
	n, err := s.putJSON(ctx, runKey(ok, rec.ID, recordName), &head)
	if err != nil {
		return err
	}
	rec.Size = size + n
	s.mu.Lock()
	if rec.Status == runs.StatusRunning {
		s.owners[rec.ID], s.saved[rec.ID] = ok, last
	} else {
		// A finished record is not saved again: forget it, so that the
		// maps hold the runs in progress only.
		delete(s.owners, rec.ID)
		delete(s.saved, rec.ID)
	}
	s.mu.Unlock()
	return nil
}

// putJSON writes v under key and returns its size.
func (s *Store) putJSON(ctx context.Context, key string, v any) (int64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("runs: encode %s: %w", key, err)
	}
	if err := s.obj.PutObject(ctx, key, bytes.NewReader(data)); err != nil {
		return 0, fmt.Errorf("runs: save %s: %w", key, err)
	}
	return int64(len(data)), nil
}

// getJSON reads key into v; a missing key is blob.ErrObjectNotFound.
func (s *Store) getJSON(ctx context.Context, key string, v any) error {
	rc, _, err := s.obj.GetObject(ctx, key)
	if err != nil {
		return fmt.Errorf("runs: read %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxRecordBytes+1))
	if err != nil {
		return fmt.Errorf("runs: read %s: %w", key, err)
	}
	if len(data) > maxRecordBytes {
		return fmt.Errorf("runs: read %s: larger than %d bytes", key, maxRecordBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("runs: decode %s: %w", key, err)
	}
	return nil
}

// Load implements runs.SharedStore.
func (s *Store) Load(ctx context.Context, owner, id string) (*runs.Record, error) {
	if !runs.ValidID(id) {
		return nil, fmt.Errorf("%q: %w", id, runs.ErrNotFound)
	}
	rec, err := s.load(ctx, ownerKey(owner), id, true)
	if err != nil {
		return nil, err
	}
	if rec.Owner != owner {
		return nil, fmt.Errorf("%s: %w", id, runs.ErrNotFound)
	}
	return rec, nil
}

// load reads a record, and its events when events is set.
func (s *Store) load(ctx context.Context, ok, id string, events bool) (*runs.Record, error) {
	rec := new(runs.Record)
	err := s.getJSON(ctx, runKey(ok, id, recordName), rec)
	if errors.Is(err, blob.ErrObjectNotFound) {
		return nil, fmt.Errorf("%s: %w", id, runs.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if rec.ID != id {
		return nil, fmt.Errorf("runs: %s holds the record of %q", runKey(ok, id, recordName), rec.ID)
	}
	if events {
		err := s.getJSON(ctx, runKey(ok, id, eventsName), &rec.Events)
		if err != nil && !errors.Is(err, blob.ErrObjectNotFound) {
			return nil, err
		}
	}
	return rec, nil
}

// runDir is one run's objects, as a listing found them.
type runDir struct {
	ok, id         string
	record, events *blob.ObjectInfo
}

// listRuns groups the objects under p by run.
func (s *Store) listRuns(ctx context.Context, p string) ([]*runDir, error) {
	objs, err := s.obj.ListObjects(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("runs: list: %w", err)
	}
	var out []*runDir
	byKey := map[string]*runDir{}
	for i := range objs {
		parts := strings.Split(strings.TrimPrefix(objs[i].Key, prefix), "/")
		if len(parts) != 3 || !runs.ValidID(parts[1]) {
			continue
		}
		d := byKey[parts[0]+"/"+parts[1]]
		if d == nil {
			d = &runDir{ok: parts[0], id: parts[1]}
			byKey[parts[0]+"/"+parts[1]] = d
			out = append(out, d)
		}
		switch parts[2] {
		case recordName:
			d.record = &objs[i]
		case eventsName:
			d.events = &objs[i]
		}
	}
	return out, nil
}

// List implements runs.SharedStore. Records deleted while it reads are
// left out.
func (s *Store) List(ctx context.Context, owner string) ([]*runs.Record, error) {
	dirs, err := s.listRuns(ctx, prefix+ownerKey(owner)+"/")
	if err != nil {
		return nil, err
	}
	recs, err := s.loadDirs(ctx, dirs, false)
	out := recs[:0]
	for _, r := range recs {
		if r.Owner == owner {
			out = append(out, r)
		}
	}
	return out, err
}

// LoadAll implements runs.Store: every record without its events, with
// the size of its objects.
func (s *Store) LoadAll(ctx context.Context) ([]*runs.Record, error) {
	dirs, err := s.listRuns(ctx, prefix)
	if err != nil {
		return nil, err
	}
	recs, err := s.loadDirs(ctx, dirs, false)
	sizes := make(map[string]int64, len(dirs))
	for _, d := range dirs {
		sizes[d.id] = d.size()
	}
	for _, r := range recs {
		r.Result, r.Progress, r.Size = nil, nil, sizes[r.ID]
	}
	return recs, err
}

// size is what a run's objects take.
func (d *runDir) size() int64 {
	var n int64
	for _, o := range []*blob.ObjectInfo{d.record, d.events} {
		if o != nil {
			n += o.Size
		}
	}
	return n
}

// loadDirs reads the records of dirs, listWorkers at a time. Unreadable
// ones are reported together, after those that could be read.
func (s *Store) loadDirs(ctx context.Context, dirs []*runDir, events bool) ([]*runs.Record, error) {
	recs := make([]*runs.Record, len(dirs))
	errs := make([]error, len(dirs))
	sem := make(chan struct{}, listWorkers)
	var wg sync.WaitGroup
	for i, d := range dirs {
		if d.record == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			recs[i], errs[i] = s.load(ctx, d.ok, d.id, events)
			if errors.Is(errs[i], runs.ErrNotFound) {
				errs[i] = nil // deleted since the listing
			}
		}()
	}
	wg.Wait()
	out := make([]*runs.Record, 0, len(recs))
	for _, r := range recs {
		if r != nil {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// Delete implements runs.Store. A run this store did not save or load is
// found by listing.
func (s *Store) Delete(ctx context.Context, id string) error {
	if !runs.ValidID(id) {
		return fmt.Errorf("runs: delete %q: %w", id, runs.ErrNotFound)
	}
	s.mu.Lock()
	ok, known := s.owners[id]
	s.mu.Unlock()
	if !known {
		dirs, err := s.listRuns(ctx, prefix)
		if err != nil {
			return err
		}
		for _, d := range dirs {
			if d.id == id {
				ok, known = d.ok, true
			}
		}
		if !known {
			return nil
		}
	}
	if err := s.deleteRun(ctx, ok, id); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.owners, id)
	delete(s.saved, id)
	s.mu.Unlock()
	return nil
}

// deleteRun removes the events first: a run half deleted still has its
// record, so that a later sweep finds it again.
func (s *Store) deleteRun(ctx context.Context, ok, id string) error {
	for _, name := range []string{eventsName, recordName} {
		if err := s.obj.DeleteObject(ctx, runKey(ok, id, name)); err != nil {
			return fmt.Errorf("runs: delete %s: %w", id, err)
		}
	}
	return nil
}

// Sweep implements runs.SharedStore: it goes by the objects' modification
// times and sizes, so it reads no record but those it removes past the
// bounds (a record in progress stays). Events left without a record (a
// delete cut short) go once they are as old.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, b runs.Bounds) (int, error) {
	dirs, err := s.listRuns(ctx, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	kept := dirs[:0]
	for _, d := range dirs {
		last := d.last()
		if last == nil || !last.Modified.Before(cutoff) {
			if d.record != nil {
				kept = append(kept, d)
			}
			continue
		}
		if err := s.remove(ctx, d); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	m, err := s.bound(ctx, kept, b)
	n += m
	if err != nil {
		errs = append(errs, err)
	}
	// A cancel request outlives its run only when the run ended before
	// its replica polled; it goes with the records of its time.
	reqs, err := s.obj.ListObjects(ctx, cancelPrefix)
	if err != nil {
		errs = append(errs, fmt.Errorf("runs: list cancel requests: %w", err))
	}
	for _, o := range reqs {
		if o.Modified.Before(cutoff) {
			if err := s.obj.DeleteObject(ctx, o.Key); err != nil {
				errs = append(errs, fmt.Errorf("runs: delete %s: %w", o.Key, err))
			}
		}
	}
	return n, errors.Join(errs...)
}

// last is the object of a run last written.
func (d *runDir) last() *blob.ObjectInfo {
	if d.record != nil {
		return d.record
	}
	return d.events
}

func (s *Store) remove(ctx context.Context, d *runDir) error {
	if err := s.deleteRun(ctx, d.ok, d.id); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.owners, d.id)
	delete(s.saved, d.id)
	s.mu.Unlock()
	return nil
}

// bound removes the oldest finished records past the bounds: first each
// owner's, then everyone's. Age is the record's last write, which for a
// finished record is when it finished. A zero bound is none.
func (s *Store) bound(ctx context.Context, dirs []*runDir, b runs.Bounds) (int, error) {
	slices.SortFunc(dirs, func(x, y *runDir) int { return x.record.Modified.Compare(y.record.Modified) })
	byOwner := map[string][]*runDir{}
	for _, d := range dirs {
		byOwner[d.ok] = append(byOwner[d.ok], d)
	}
	removed := map[*runDir]bool{}
	n := 0
	var errs []error
	trim := func(ds []*runDir, maxCount int, maxBytes int64) {
		count, bytes := 0, int64(0)
		for _, d := range ds {
			if !removed[d] {
				count++
				bytes += d.size()
			}
		}
		for _, d := range ds {
			if (maxCount <= 0 || count <= maxCount) && (maxBytes <= 0 || bytes <= maxBytes) {
				return
			}
			if removed[d] {
				continue
			}
			rec, err := s.load(ctx, d.ok, d.id, false)
			if err == nil && rec.Status == runs.StatusRunning {
				continue // counted, never removed
			}
			if err := s.remove(ctx, d); err != nil {
				errs = append(errs, err)
				continue
			}
			removed[d] = true
			count--
			bytes -= d.size()
			n++
		}
	}
	for _, ds := range byOwner {
		trim(ds, b.MaxOwnerRecords, b.MaxOwnerBytes)
	}
	trim(dirs, b.MaxRecords, b.MaxBytes)
	return n, errors.Join(errs...)
}

// RequestCancel implements runs.SharedStore.
func (s *Store) RequestCancel(ctx context.Context, _, id string) error {
	if !runs.ValidID(id) {
		return fmt.Errorf("runs: cancel %q: %w", id, runs.ErrNotFound)
	}
	if err := s.obj.PutObject(ctx, cancelPrefix+id, bytes.NewReader(nil)); err != nil {
		return fmt.Errorf("runs: cancel %s: %w", id, err)
	}
	return nil
}

// CancelRequests implements runs.SharedStore.
func (s *Store) CancelRequests(ctx context.Context) ([]string, error) {
	objs, err := s.obj.ListObjects(ctx, cancelPrefix)
	if err != nil {
		return nil, fmt.Errorf("runs: list cancel requests: %w", err)
	}
	var ids []string
	for _, o := range objs {
		if id := strings.TrimPrefix(o.Key, cancelPrefix); runs.ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// ClearCancel implements runs.SharedStore.
func (s *Store) ClearCancel(ctx context.Context, id string) error {
	if !runs.ValidID(id) {
		return fmt.Errorf("runs: clear cancel %q: %w", id, runs.ErrNotFound)
	}
	if err := s.obj.DeleteObject(ctx, cancelPrefix+id); err != nil {
		return fmt.Errorf("runs: clear cancel %s: %w", id, err)
	}
	return nil
}
