package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// FSOptions configures an FSStore.
type FSOptions struct {
	// Dir is the data folder; created (0700) when missing.
	Dir string
	// MaxBlobSize: 0 means DefaultMaxSize (256 MiB).
	MaxBlobSize int64
	// MaxStoreBytes bounds the bytes of all blobs together; 0: no bound
	// but the disk's.
	MaxStoreBytes int64
	// TTL: blobs older than this are removed by Sweep; 0 keeps blobs
	// forever (pass DefaultTTL for the usual day).
	TTL time.Duration
	// SweepInterval: how often the janitor sweeps; 0 means TTL/4 bounded
	// to [1s, 1h]. No janitor runs without a TTL.
	SweepInterval time.Duration
	Logger        zerolog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

const (
	objectsDir = "objects"
	lockFile   = "LOCK"
	tmpPrefix  = ".tmp-"
)

// FSStore is the embedded Store: one file per blob under
// Dir/objects/<first two hex digits>/<32 hex digits>, holding a 512-byte
// header (magic and JSON metadata: id, kind, size, sha256, created,
// owner) followed by the content. A Put streams into a hidden temp file in the
// same folder, writes the header last, fsyncs, renames it into place and
// fsyncs the folder, so a blob file exists only complete; temp files left
// by a crash are removed at open. An in-memory index built at open serves
// Stat, leases and TTL. Dir/LOCK (flock) keeps a second process out.
type FSStore struct {
	opts    FSOptions
	log     zerolog.Logger
	objects string
	lock    *os.File
	idx     blobIndex
	obj     fsObjects

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// OpenFSStore opens (or creates) the store in opts.Dir, removes leftover
// temp files and corrupt blob files, indexes the rest, sweeps once and
// starts the janitor when a TTL is set.
func OpenFSStore(opts FSOptions) (*FSStore, error) {
	if opts.Dir == "" {
		return nil, errors.New("open blob store: empty dir")
	}
	if opts.MaxBlobSize <= 0 {
		opts.MaxBlobSize = DefaultMaxSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = min(max(opts.TTL/4, time.Second), time.Hour)
	}
	s := &FSStore{opts: opts, log: opts.Logger, objects: filepath.Join(opts.Dir, objectsDir),
		idx: newBlobIndex(opts.MaxStoreBytes), obj: fsObjects{root: filepath.Join(opts.Dir, objectsKVDir)}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := os.MkdirAll(s.objects, 0o700); err != nil {
		return nil, fmt.Errorf("open blob store: %w", err)
	}
	if err := os.MkdirAll(s.obj.root, 0o700); err != nil {
		return nil, fmt.Errorf("open blob store: %w", err)
	}
	lock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	if err := s.scan(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("open blob store: %w", err)
	}
	if _, err := s.Sweep(context.Background()); err != nil {
		s.log.Warn().Err(err).Msg("blob sweep at open")
	}
	if opts.TTL > 0 {
		go RunJanitor(s.stop, s.done, s.opts.SweepInterval, s.Sweep, s.log)
	} else {
		close(s.done)
	}
	return s, nil
}

func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open blob store: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("open blob store %s: %w", dir, ErrStoreLocked)
		}
		return nil, fmt.Errorf("open blob store: lock: %w", err)
	}
	return f, nil
}

// scan indexes every blob file, removing temp files and corrupt blobs.
func (s *FSStore) scan() error {
	shards, err := os.ReadDir(s.objects)
	if err != nil {
		return err
	}
	removed := 0
	for _, sh := range shards {
		if !sh.IsDir() || !isShardName(sh.Name()) {
			continue
		}
		dir := filepath.Join(s.objects, sh.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, f := range files {
			if s.scanFile(dir, f.Name()) {
				removed++
			}
		}
	}
	removed += s.obj.removeTemps()
	s.scanUploads()
	count, bytes := s.idx.usage()
	s.log.Info().Str("dir", s.opts.Dir).Int("blobs", count).Int64("bytes", bytes).
		Int64("pending_upload_bytes", s.idx.pendingUsage()).Int("removed_partial", removed).Msg("blob store opened")
	return nil
}

// scanFile indexes or removes one file; it reports a removal.
func (s *FSStore) scanFile(dir, name string) bool {
	p := filepath.Join(dir, name)
	if strings.HasPrefix(name, tmpPrefix) {
		return os.Remove(p) == nil
	}
	id := idPrefix + name
	if ValidateID(id) != nil || !strings.HasPrefix(name, filepath.Base(dir)) {
		return false // not ours: left alone
	}
	info, err := readHeaderFile(p, id)
	if err != nil {
		s.log.Warn().Err(err).Str("path", p).Msg("removing unreadable blob file")
		return os.Remove(p) == nil
	}
	s.idx.commit(&blobEntry{info: info})
	return false
}

func isShardName(n string) bool { return len(n) == 2 && isLowerHex(n) }

// path maps a validated id to its file; only ValidateID-checked ids
// (32 hex digits) reach it, so no traversal is possible.
func (s *FSStore) path(id string) (dir, file string) {
	h := id[len(idPrefix):]
	dir = filepath.Join(s.objects, h[:2])
	return dir, filepath.Join(dir, h)
}

// NewID implements Store.
func (s *FSStore) NewID() string { return NewID() }

// Put implements Store. A full disk or descriptor table fails it
// with a *StorageFullError; the temp file is removed either way.
func (s *FSStore) Put(ctx context.Context, id string, opts PutOptions, r io.Reader) (Info, error) {
	if opts.Size > s.opts.MaxBlobSize {
		return Info{}, fmt.Errorf("put %s: %w", id, tooLarge(opts.Size, s.opts.MaxBlobSize))
	}
	kind, err := s.idx.startPut(id, opts)
	if err != nil {
		return Info{}, err
	}
	opts.Kind = kind
	info, err := s.write(ctx, id, opts, r)
	if err != nil {
		s.idx.unreserve(id)
		return Info{}, fmt.Errorf("put %s: %w", id, asStorageFull(err))
	}
	s.idx.commit(&blobEntry{info: info})
	return info, nil
}

// write streams r into a temp file and commits it by rename once its size
// is admitted by the quotas.
func (s *FSStore) write(ctx context.Context, id string, opts PutOptions, r io.Reader) (Info, error) {
	dir, final := s.path(id)
	if err := s.ensureShard(dir); err != nil {
		return Info{}, err
	}
	f, err := os.CreateTemp(dir, tmpPrefix+filepath.Base(final)+"-*")
	if err != nil {
		return Info{}, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := s.copyBody(ctx, f, h, r)
	if err != nil {
		return Info{}, err
	}
	info := Info{ID: id, Kind: opts.Kind, Size: n, SHA256: hex.EncodeToString(h.Sum(nil)),
		Created: s.opts.Now().UTC(), Owner: opts.Owner}
	if err := checkSum(opts.SHA256, info.SHA256); err != nil {
		return Info{}, err
	}
	if err := s.idx.admit(id, opts.Owner, n, opts.OwnerQuota, opts.upload); err != nil {
		return Info{}, err
	}
	if err := finishFile(f, info); err != nil {
		return Info{}, err
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return Info{}, err
	}
	committed = true
	if err := syncDir(dir); err != nil {
		_ = os.Remove(final)
		return Info{}, err
	}
	return info, nil
}

// copyBody writes the content after the header's room, within the limit.
func (s *FSStore) copyBody(ctx context.Context, f *os.File, h hash.Hash, r io.Reader) (int64, error) {
	if _, err := f.Seek(headerSize, io.SeekStart); err != nil {
		return 0, err
	}
	limit := s.opts.MaxBlobSize
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(ctxReader{ctx, r}, limit+1))
	if err != nil {
		return n, err
	}
	if n > limit {
		return n, tooLarge(n, limit)
	}
	return n, nil
}

// finishFile writes the header (last, so a partial file has none), then
// fsyncs and closes.
func finishFile(f *os.File, info Info) error {
	hdr, err := encodeHeader(info)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// ensureShard creates a shard folder, making its entry durable.
func (s *FSStore) ensureShard(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(s.objects)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Stat implements Store.
func (s *FSStore) Stat(_ context.Context, id string) (Info, error) {
	if err := ValidateID(id); err != nil {
		return Info{}, fmt.Errorf("stat blob: %w", err)
	}
	info, err := s.idx.stat(id)
	if err != nil {
		return Info{}, fmt.Errorf("stat %s: %w", id, err)
	}
	return info, nil
}

// Open implements Store.
func (s *FSStore) Open(_ context.Context, id string) (Blob, error) {
	if err := ValidateID(id); err != nil {
		return nil, fmt.Errorf("open blob: %w", err)
	}
	e, err := s.idx.acquire(id)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", id, err)
	}
	_, p := s.path(id)
	f, err := os.Open(p)
	if err != nil {
		s.idx.release(e)
		if errors.Is(err, fs.ErrNotExist) {
			s.idx.drop(e)
			return nil, fmt.Errorf("open %s: file removed: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("open %s: %w", id, err)
	}
	return &leasedBlob{SectionReader: io.NewSectionReader(f, headerSize, e.info.Size), info: e.info,
		onClose: func() error { s.idx.release(e); return f.Close() }}, nil
}

// Remove implements Store.
func (s *FSStore) Remove(_ context.Context, id string) error {
	if err := ValidateID(id); err != nil {
		return fmt.Errorf("remove blob: %w", err)
	}
	e, err := s.idx.take(id)
	if err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	_, p := s.path(e.info.ID)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	return nil
}

// Sweep implements Store. Blobs are taken out of the index first, so
// a concurrent Open either leased the blob before (and it stays) or gets
// ErrNotFound.
func (s *FSStore) Sweep(ctx context.Context) (int, error) {
	if s.opts.TTL <= 0 {
		return 0, nil
	}
	var firstErr error
	victims := s.idx.takeExpired(s.opts.Now(), s.opts.TTL)
	for _, e := range victims {
		_, p := s.path(e.info.ID)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && firstErr == nil {
			firstErr = fmt.Errorf("sweep blobs: %w", err)
		}
	}
	if len(victims) > 0 {
		s.log.Debug().Int("removed", len(victims)).Msg("expired blobs removed")
	}
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return len(victims), firstErr
}

// Usage implements Store.
func (s *FSStore) Usage() (int, int64) { return s.idx.usage() }

// OwnerUsage implements Store.
func (s *FSStore) OwnerUsage(owner string) int64 { return s.idx.ownerUsage(owner) }

// Close stops the janitor and releases the folder lock. It is idempotent;
// Puts fail afterwards, open Blobs stay readable.
func (s *FSStore) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.idx.close()
		close(s.stop)
		<-s.done
		err = s.lock.Close() // closing the descriptor drops the flock
	})
	return err
}

// Objects implements Store: files under Dir/kv.
func (s *FSStore) Objects() Objects { return s.obj }

// MaxSize implements Store.
func (s *FSStore) MaxSize() int64 { return s.opts.MaxBlobSize }
