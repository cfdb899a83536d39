package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store keeps run records across restarts. The registry saves a record
// when its run starts (status running) and again when it finishes, lists
// the records once when it opens (LoadAll: summaries only), reads a whole
// record when a client asks for its run (Load), and deletes records past
// retention or the bounds. Implementations must be safe for concurrent
// use; a record handed to Save is not modified afterwards, except that
// Save may set its Size.
//
// The interface is small on purpose: an object-storage backend implements
// it with one object per run.
type Store interface {
	Save(ctx context.Context, rec *Record) error
	// Load returns owner's record id, events included. An unknown id, a
	// malformed one or another owner's record is ErrNotFound.
	Load(ctx context.Context, owner, id string) (*Record, error)
	// LoadAll returns every record without its Events and Result, with
	// its Size.
	LoadAll(ctx context.Context) ([]*Record, error)
	Delete(ctx context.Context, id string) error
}

// head is a record's summary as LoadAll returns it.
func head(rec *Record, size int64) *Record {
	h := *rec
	h.Events, h.Result, h.Progress, h.Size = nil, nil, nil, size
	return &h
}

// MemoryStore keeps records in memory: they do not survive a restart.
type MemoryStore struct {
	mu   sync.Mutex
	recs map[string]*Record // guarded by mu
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{recs: map[string]*Record{}} }

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, rec *Record) error {
	if !validID(rec.ID) {
		return fmt.Errorf("runs: save %q: %w", rec.ID, ErrNotFound)
	}
	rec.Size = estimateSize(rec)
	m.mu.Lock()
	m.recs[rec.ID] = rec
	m.mu.Unlock()
	return nil
}

// Load implements Store.
func (m *MemoryStore) Load(_ context.Context, owner, id string) (*Record, error) {
	m.mu.Lock()
	rec := m.recs[id]
	m.mu.Unlock()
	if rec == nil || rec.Owner != owner {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	c := *rec
	c.Events = slices.Clone(rec.Events)
	return &c, nil
}

// LoadAll implements Store.
func (m *MemoryStore) LoadAll(context.Context) ([]*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, head(r, r.Size))
	}
	return out, nil
}

// Delete implements Store.
func (m *MemoryStore) Delete(_ context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("runs: delete %q: %w", id, ErrNotFound)
	}
	m.mu.Lock()
	delete(m.recs, id)
	m.mu.Unlock()
	return nil
}

// FileStore keeps one JSON file per run in a directory.
type FileStore struct {
	dir string
}

// NewFileStore returns a store in dir, creating it.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("runs: create %s: %w", dir, err)
	}
	return &FileStore{dir: dir}, nil
}

func (f *FileStore) path(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("runs: %q: %w", id, ErrNotFound)
	}
	return filepath.Join(f.dir, id+".json"), nil
}

// Save implements Store: the file is replaced whole, so a crash leaves
// either the old record or the new one.
func (f *FileStore) Save(_ context.Context, rec *Record) error {
	p, err := f.path(rec.ID)
	if err != nil {
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("runs: encode %s: %w", rec.ID, err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("runs: save %s: %w", rec.ID, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("runs: save %s: %w", rec.ID, err)
	}
	rec.Size = int64(len(data))
	return nil
}

// Load implements Store.
func (f *FileStore) Load(_ context.Context, owner, id string) (*Record, error) {
	p, err := f.path(id)
	if err != nil {
		return nil, err
	}
	rec, err := readRecord(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if rec.ID != id || rec.Owner != owner {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	return rec, nil
}

// LoadAll implements Store. Unreadable files are skipped and reported
// together in the error, after the records that could be read. Each file
// is read whole, but only its summary is kept.
func (f *FileStore) LoadAll(context.Context) ([]*Record, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("runs: list %s: %w", f.dir, err)
	}
	var out []*Record
	var errs []error
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validID(id) {
			continue
		}
		rec, err := readHead(filepath.Join(f.dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, rec)
	}
	return out, errors.Join(errs...)
}

func readRecord(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("runs: read %s: %w", path, err)
	}
	rec := new(Record)
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("runs: decode %s: %w", path, err)
	}
	rec.Size = int64(len(data))
	return rec, nil
}

// readHead reads a record's summary: the events and the run object are
// skipped by the decoder rather than kept.
func readHead(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("runs: read %s: %w", path, err)
	}
	var h struct {
		ID         string    `json:"run_id"`
		Owner      string    `json:"owner"`
		What       string    `json:"what"`
		RequestID  string    `json:"request_id"`
		Status     string    `json:"status"`
		StartedAt  time.Time `json:"started_at"`
		FinishedAt time.Time `json:"finished_at"`
		Updated    time.Time `json:"updated_at"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("runs: decode %s: %w", path, err)
	}
	return &Record{ID: h.ID, Owner: h.Owner, What: h.What, RequestID: h.RequestID, Status: h.Status,
		StartedAt: h.StartedAt, FinishedAt: h.FinishedAt, Updated: h.Updated, Size: int64(len(data))}, nil
}

// Delete implements Store.
func (f *FileStore) Delete(_ context.Context, id string) error {
	p, err := f.path(id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("runs: delete %s: %w", id, err)
	}
	return nil
}

// validID accepts the ids NewID makes: "run_" and 16 hex digits.
func validID(id string) bool {
	hex, ok := strings.CutPrefix(id, "run_")
	if !ok || len(hex) != 16 {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
