package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const objectsKVDir = "kv"

// fsObjects is the Objects space of an FSStore: one file per key under
// Dir/kv, written to a hidden temp file, fsynced and renamed into place.
type fsObjects struct {
	root string
}

// path maps a validated key to its file; validated keys hold no "." or
// ".." segment, so no traversal is possible.
func (o fsObjects) path(key string) string {
	return filepath.Join(o.root, filepath.FromSlash(key))
}

func (o fsObjects) PutObject(ctx context.Context, key string, r io.Reader) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("put object: %w", err)
	}
	if err := o.write(ctx, o.path(key), r); err != nil {
		return fmt.Errorf("put object %s: %w", key, asStorageFull(err))
	}
	return nil
}

// CreateObject writes a temp file and hard-links it to the key's path:
// link(2) fails when the path exists, and is atomic.
func (o fsObjects) CreateObject(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("create object: %w", err)
	}
	p := o.path(key)
	tmp, err := o.temp(ctx, p, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("create object %s: %w", key, asStorageFull(err))
	}
	err = os.Link(tmp, p)
	_ = os.Remove(tmp)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create object %s: %w", key, ErrObjectExists)
	}
	if err == nil {
		err = syncDir(filepath.Dir(p))
	}
	if err != nil {
		return fmt.Errorf("create object %s: %w", key, asStorageFull(err))
	}
	return nil
}

func (o fsObjects) write(ctx context.Context, p string, r io.Reader) error {
	tmp, err := o.temp(ctx, p, r)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(p))
}

// temp writes r into a synced hidden temp file beside p and returns its
// path; on error nothing is left.
func (o fsObjects) temp(ctx context.Context, p string, r io.Reader) (string, error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, ctxReader{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (o fsObjects) GetObject(_ context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("get object: %w", err)
	}
	f, err := os.Open(o.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ObjectInfo{}, fmt.Errorf("get object %s: %w", key, ErrObjectNotFound)
	}
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("get object %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, ObjectInfo{}, fmt.Errorf("get object %s: %w", key, ErrObjectNotFound)
	}
	return f, ObjectInfo{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC()}, nil
}

func (o fsObjects) ListObjects(_ context.Context, prefix string) ([]ObjectInfo, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	start := o.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = o.path(prefix[:i])
	}
	var out []ObjectInfo
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile, or never there
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(o.root, p)
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		out = append(out, ObjectInfo{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list objects %s: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (o fsObjects) DeleteObject(_ context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("delete object: %w", err)
	}
	p := o.path(key)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete object %s: %w", key, err)
	}
	// Folders left empty go too (best effort: a non-empty one stays).
	for dir := filepath.Dir(p); dir != o.root && strings.HasPrefix(dir, o.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// removeTemps removes the temp files of writes a crash interrupted; the
// store's lock guarantees no write of this store is running.
func (o fsObjects) removeTemps() int {
	n := 0
	_ = filepath.WalkDir(o.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), tmpPrefix) && os.Remove(p) == nil {
			n++
		}
		return nil
	})
	return n
}
