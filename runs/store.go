package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Store keeps run records across restarts. The registry saves a record
// when its run starts (status running) and again when it finishes, loads
// every record once when it opens, and deletes records past retention.
// Implementations must be safe for concurrent use; a record handed to Save
// is not modified afterwards.
//
// The interface is small on purpose: an object-storage backend implements
// it with one object per run.
type Store interface {
	Save(ctx context.Context, rec *Record) error
	LoadAll(ctx context.Context) ([]*Record, error)
	Delete(ctx context.Context, id string) error
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
	m.mu.Lock()
	m.recs[rec.ID] = rec
	m.mu.Unlock()
	return nil
}

// LoadAll implements Store.
func (m *MemoryStore) LoadAll(context.Context) ([]*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, r)
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
	return nil
}

// LoadAll implements Store. Unreadable files are skipped and reported
// together in the error, after the records that could be read.
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
		rec, err := readRecord(filepath.Join(f.dir, e.Name()))
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
	return rec, nil
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
