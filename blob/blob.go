package blob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
	"unicode/utf8"
)

// Blob store defaults.
const (
	DefaultMaxSize int64 = 256 << 20
	DefaultTTL           = 24 * time.Hour
	idPrefix             = "blob:"
	idHexLen             = 32 // 128 bits
	maxKindLen           = 127
)

// Info is the metadata kept with every blob.
type Info struct {
	ID      string    `json:"blob_id"`
	Kind    string    `json:"kind"` // normalized MIME type
	Size    int64     `json:"size_bytes"`
	SHA256  string    `json:"sha256"` // lowercase hex
	Created time.Time `json:"created"`
	// Owner is the name of the identity the blob belongs to; "" for a blob
	// stored before blobs had owners.
	Owner string `json:"owner,omitempty"`
}

// PutOptions describe a blob being stored.
type PutOptions struct {
	// Kind is the blob's MIME type.
	Kind string
	// Owner is the name of the identity the blob belongs to.
	Owner string
	// OwnerQuota bounds the bytes of all blobs of Owner together, this one
	// included; 0 means no bound.
	OwnerQuota int64
	// SHA256, when set (lowercase hex), is the content's expected digest:
	// a Put whose content differs fails with ErrChecksumMismatch and keeps
	// nothing. Knowing it up front lets a backend store the blob in one
	// pass (S3 writes it straight to its key with the digest as metadata).
	SHA256 string
	// Size, when positive, is the content's length as the caller knows it
	// (a file's size): the size limit and the quotas are checked against
	// it before any byte is read, so a writer that cannot fit is refused
	// without reading its content. The bytes read are checked again.
	Size int64

	// upload is the id of the upload this Put finishes: its chunks' hold
	// on the quotas becomes the blob's bytes.
	upload string
}

// checkSum compares a computed digest with the expected one, if any.
func checkSum(want, got string) error {
	if want != "" && want != got {
		return fmt.Errorf("content sha256 %s: %w", got, ErrChecksumMismatch)
	}
	return nil
}

// Blob is an open blob. It holds a lease: TTL cleanup never removes a blob
// while it is open. Close releases the lease and is idempotent. ReadAt is
// safe for concurrent use and reads only the blob's content (io.EOF past
// Info().Size).
type Blob interface {
	io.ReaderAt
	Info() Info
	Close() error
}

// Store stores immutable blobs by id. Implementations are safe for
// concurrent use; the embedded default is FSStore, MemStore serves tests,
// and an S3-compatible backend can implement the same contract.
type Store interface {
	// NewID returns a fresh random id ("blob:" + 32 lowercase hex digits).
	NewID() string
	// Put stores the content of r under id (from NewID). It is all or
	// nothing: on any error, ctx cancellation included, no blob is visible
	// and nothing of it remains. Errors: ErrInvalidID, ErrInvalidKind,
	// ErrExists, ErrTooLarge, ErrStorageFull (a *StorageFullError:
	// disk, file descriptors, the store's quota or opts.OwnerQuota),
	// ErrStoreClosed.
	Put(ctx context.Context, id string, opts PutOptions, r io.Reader) (Info, error)
	// Stat returns a blob's metadata or ErrNotFound.
	Stat(ctx context.Context, id string) (Info, error)
	// Open returns the blob for reading; the caller must Close it.
	Open(ctx context.Context, id string) (Blob, error)
	// Remove deletes a blob at once (ErrNotFound if there is none);
	// Blobs already open stay readable until closed.
	Remove(ctx context.Context, id string) error
	// Sweep removes the blobs older than the TTL that nobody holds open.
	Sweep(ctx context.Context) (removed int, err error)
	// Usage returns the number of blobs and the sum of their sizes.
	Usage() (count int, bytes int64)
	// OwnerUsage returns the sum of the sizes of owner's blobs.
	OwnerUsage(owner string) int64
	// MaxSize is the largest blob Put takes.
	MaxSize() int64
	// Objects is the key/object space kept in the same backend.
	Objects() Objects
	// Close stops background work; open Blobs stay readable.
	Close() error
}

// OpenOwned opens a blob of owner. A blob of another owner is
// ErrNotFound with the same text as an unknown id, so that an id seen
// elsewhere tells nothing about the blob behind it.
func OpenOwned(ctx context.Context, s Store, id, owner string) (Blob, error) {
	b, err := s.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	if b.Info().Owner != owner {
		_ = b.Close()
		return nil, fmt.Errorf("open %s: %w", id, ErrNotFound)
	}
	return b, nil
}

// NewID returns "blob:" followed by 128 bits from crypto/rand in
// lowercase hex. Ids never derive from user input.
func NewID() string {
	var b [idHexLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return idPrefix + hex.EncodeToString(b[:])
}

// NewIDs returns n ids as NewID makes them, drawn and allocated at once:
// a run is handed all the ids its output blobs may take before it starts.
func NewIDs(n int) []string {
	const idLen = len(idPrefix) + idHexLen
	raw := make([]byte, n*idHexLen/2)
	_, _ = rand.Read(raw)
	text := make([]byte, 0, n*idLen)
	for i := range n {
		text = append(text, idPrefix...)
		text = hex.AppendEncode(text, raw[i*idHexLen/2:(i+1)*idHexLen/2])
	}
	all := string(text)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = all[i*idLen : (i+1)*idLen]
	}
	return ids
}

// ValidateID checks id strictly (no other form can reach a file path).
func ValidateID(id string) error {
	hexPart, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(hexPart) != idHexLen || !isLowerHex(hexPart) {
		return fmt.Errorf("%q: %w", clipActual(id), ErrInvalidID)
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NormalizeKind validates a MIME type "type/subtype" with optional
// parameters ("text/plain; charset=utf-8"), at most 127 characters, each
// name an RFC 6838 restricted-name, and returns it in canonical form
// (lowercase type and subtype).
func NormalizeKind(kind string) (string, error) {
	if kind == "" || len(kind) > maxKindLen {
		return "", fmt.Errorf("kind %q: want a MIME type of 1-%d characters: %w", clipActual(kind), maxKindLen, ErrInvalidKind)
	}
	mt, params, err := mime.ParseMediaType(kind)
	if err != nil {
		return "", fmt.Errorf("kind %q: %v: %w", kind, err, ErrInvalidKind)
	}
	typ, sub, ok := strings.Cut(mt, "/")
	if !ok || !restrictedName(typ) || !restrictedName(sub) {
		return "", fmt.Errorf("kind %q: want type/subtype: %w", kind, ErrInvalidKind)
	}
	out := mime.FormatMediaType(mt, params)
	if out == "" || len(out) > maxKindLen {
		return "", fmt.Errorf("kind %q: %w", kind, ErrInvalidKind)
	}
	return out, nil
}

// restrictedName is RFC 6838 §4.2: 1-127 of [A-Za-z0-9!#$&^_.+-],
// starting with a letter or digit.
func restrictedName(s string) bool {
	if s == "" || len(s) > maxKindLen || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isAlnum(s[i]) && !strings.ContainsRune("!#$&^_.+-", rune(s[i])) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// IsTextKind reports whether blobs of this kind carry text (sent as UTF-8
// rather than base64): text/*, JSON, XML, YAML, TOML, JavaScript, CSV and
// the +json / +xml structured syntaxes.
func IsTextKind(kind string) bool {
	mt, _, err := mime.ParseMediaType(kind)
	if err != nil {
		return false
	}
	typ, sub, _ := strings.Cut(mt, "/")
	if typ == "text" || strings.HasSuffix(sub, "+json") || strings.HasSuffix(sub, "+xml") || strings.HasSuffix(sub, "+yaml") {
		return true
	}
	switch mt {
	case "application/json", "application/x-ndjson", "application/xml", "application/yaml",
		"application/x-yaml", "application/toml", "application/javascript", "application/csv":
		return true
	}
	return false
}

// SampleMode selects what ReadSample returns.
type SampleMode string

// The read_blob modes.
const (
	SampleHead SampleMode = "sample_head"
	SampleTail SampleMode = "sample_tail"
	SampleFull SampleMode = "full"
)

// ReadSample reads at most maxBytes (> 0) of b: the first bytes
// (SampleHead), the last ones (SampleTail), or all of it (SampleFull,
// which fails with ErrFullReadTooLarge when the blob is larger).
// truncated tells that bytes were left out. For text kinds a cut never
// splits a UTF-8 sequence, so a sample may be up to 3 bytes shorter.
func ReadSample(b Blob, mode SampleMode, maxBytes int64) (data []byte, truncated bool, err error) {
	if maxBytes <= 0 {
		return nil, false, fmt.Errorf("read sample: max_bytes must be positive: %w", ErrInvalidSample)
	}
	info := b.Info()
	n := min(maxBytes, info.Size)
	var off int64
	switch mode {
	case SampleHead:
	case SampleTail:
		off = info.Size - n
	case SampleFull:
		if info.Size > maxBytes {
			return nil, false, fmt.Errorf("read %s: %d bytes: %w", info.ID, info.Size, ErrFullReadTooLarge)
		}
	default:
		return nil, false, fmt.Errorf("read sample: mode %q: %w", clipActual(string(mode)), ErrInvalidSample)
	}
	data = make([]byte, n)
	if _, err := b.ReadAt(data, off); err != nil && err != io.EOF {
		return nil, false, fmt.Errorf("read %s: %w", info.ID, err)
	}
	truncated = n < info.Size
	if truncated && IsTextKind(info.Kind) {
		data = trimPartialRunes(data, mode == SampleTail)
	}
	return data, truncated, nil
}

// trimPartialRunes drops a UTF-8 sequence cut by sampling: at the end of
// a head sample, at the start of a tail sample.
func trimPartialRunes(b []byte, atStart bool) []byte {
	if atStart {
		for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
			if utf8.RuneStart(b[i]) {
				return b[i:]
			}
		}
		return b
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return b
			}
			return b[:i]
		}
	}
	return b
}
