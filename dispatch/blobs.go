package dispatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"

	"github.com/skillgate/skillgate/blob"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/transport"
)

// DefaultSampleBytes is read_blob's max_bytes when the client gives none.
const DefaultSampleBytes = 4096

// SampleRange is read_blob's mode for reading a blob piece by piece.
const SampleRange = "range"

// blobGroup is the blob methods, direct and chunked uploads.
func (d *Dispatcher) blobGroup() methodGroup {
	return methodGroup{
		methods: []groupMethod{
			{name: MethodCreateBlob, aliases: []string{"CreateBlob"}, fn: d.createBlob},
			{name: MethodReadBlob, aliases: []string{"ReadBlob"}, fn: d.readBlob},
			{name: MethodBeginUpload, aliases: []string{"BeginUpload"}, fn: d.beginUpload},
			{name: MethodUploadChunk, aliases: []string{"UploadChunk"}, fn: d.uploadChunk},
			{name: MethodFinishUpload, aliases: []string{"FinishUpload"}, fn: d.finishUpload},
		},
		errors: append(errorTable{{blob.ErrNotFound, blobNotFound}, {blob.ErrStorageFull, storageFull}}, uploadErrors()...),
	}
}

func blobNotFound(err error) *transport.Error {
	return &transport.Error{Code: transport.CodeInvalidParams, Message: "Blob not found.",
		StringCode: StringBlobNotFound, Details: err.Error() + "; blobs expire after the gateway's blob TTL"}
}

// storageFull answers a full disk, descriptor table or quota. Only the
// StorageFullError's own text reaches the client: the system error behind
// it names files of the data folder. Space comes back as blobs expire,
// hence a retry hint of seconds rather than milliseconds.
func storageFull(err error) *transport.Error {
	details := "the gateway's blob storage is full"
	var se *blob.StorageFullError
	if errors.As(err, &se) {
		details = se.Error()
	}
	return transport.AppError(StringStorageFull, "Blob storage is full; nothing was stored.").
		WithDetails(details+"; blobs free space as they expire").WithRetry(5000, 3)
}

// blobOwner is the owner of the blobs a call creates and the only one
// whose blobs it may read: the caller's identity name. Every anonymous
// caller of an open gateway is the one identity "anonymous" and shares
// its blobs.
func blobOwner(call *Call) string {
	if call.Identity == nil {
		return auth.AnonymousName
	}
	return call.Identity.Name()
}

// blobPut describes a blob the caller stores: its owner and quota.
func blobPut(call *Call, kind string) blob.PutOptions {
	return blob.PutOptions{Kind: kind, Owner: blobOwner(call), OwnerQuota: call.Identity.Limits().BlobStoreBytes}
}

// CreateBlobResult is the result of create_blob.
type CreateBlobResult struct {
	BlobID    string `json:"blob_id"`
	SizeBytes int64  `json:"size_bytes"`
	Kind      string `json:"kind"`
	SHA256    string `json:"sha256"`
}

func (d *Dispatcher) createBlob(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	content := p.str("content", true)
	kind := p.String("kind")
	encoding := p.Enum("encoding", "", EncodingUTF8, EncodingBase64)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if kind == "" {
		kind = "text/plain"
	}
	kind, err := blob.NormalizeKind(kind)
	if err != nil {
		return nil, paramErr("kind", "must be a MIME type such as text/plain, text/csv or application/json")
	}
	if encoding == "" {
		encoding = EncodingUTF8
		if !blob.IsTextKind(kind) {
			encoding = EncodingBase64
		}
	}
	data := []byte(content)
	if encoding == EncodingBase64 {
		if data, err = base64.StdEncoding.DecodeString(content); err != nil {
			return nil, paramErr("content", "must be base64 (standard alphabet, padded) for kind "+kind+
				`; send text kinds as plain strings or set "encoding":"utf-8"`)
		}
	}
	put := blobPut(call, kind)
	sum := sha256.Sum256(data) // known up front, so a store can write in one pass
	put.SHA256 = hex.EncodeToString(sum[:])
	info, err := d.opts.Blobs.Put(ctx, d.opts.Blobs.NewID(), put, bytes.NewReader(data))
	if errors.Is(err, blob.ErrInvalidKind) {
		// A kind that passed NormalizeKind can still overflow the blob's
		// fixed-size header once JSON-escaped next to a long owner name.
		return nil, paramErr("kind", "is too long to store with the blob; use a shorter MIME type with fewer parameters")
	}
	if errors.Is(err, blob.ErrTooLarge) {
		return nil, transport.AppError(StringBlobTooLarge, "The blob is larger than the gateway accepts.").
			WithDetails(err.Error())
	}
	if err != nil {
		return nil, err
	}
	return &CreateBlobResult{BlobID: info.ID, SizeBytes: info.Size, Kind: info.Kind, SHA256: info.SHA256}, nil
}

// ReadBlobResult is the result of read_blob.
type ReadBlobResult struct {
	BlobID    string `json:"blob_id"`
	Kind      string `json:"kind"`
	SizeBytes int64  `json:"size_bytes"`
	Encoding  string `json:"encoding"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
}

func (d *Dispatcher) readBlob(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	id := p.RequiredString("blob_id")
	mode := p.Enum("mode", string(blob.SampleHead), string(blob.SampleHead), string(blob.SampleTail), string(blob.SampleFull), SampleRange)
	maxBytes := p.Int("max_bytes", 0, 1, 1<<40)
	offset := p.Int("offset", -1, 0, 1<<62)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if blob.ValidateID(id) != nil {
		return nil, paramErr("blob_id", `must be a blob id such as "blob:3f2a…" as returned by create_blob`)
	}
	b, err := blob.OpenOwned(ctx, d.opts.Blobs, id, blobOwner(call))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	info := b.Info()
	text := blob.IsTextKind(info.Kind)
	limit := d.sampleLimit(text)
	if mode == SampleRange {
		return d.readRange(b, max(offset, 0), maxBytes, limit)
	}
	if offset >= 0 {
		return nil, paramErr("offset", `is only read with "mode":"range"`)
	}
	if mode == string(blob.SampleFull) && info.Size > limit {
		return nil, paramErr("mode", "full cannot return this blob: it is "+strconv.FormatInt(info.Size, 10)+
			" bytes and one response carries at most "+strconv.FormatInt(limit, 10)+
			`; read it whole in pieces with "mode":"range" and "offset" (each answer's next_offset is where the next starts),`+
			` or a part with "mode":"sample_head" or "sample_tail" and max_bytes`)
	}
	want := int64(DefaultSampleBytes)
	if maxBytes > 0 {
		want = maxBytes
	}
	if mode == string(blob.SampleFull) {
		want = max(info.Size, 1)
	}
	data, truncated, err := blob.ReadSample(b, blob.SampleMode(mode), min(want, limit))
	if err != nil {
		return nil, err
	}
	pl, n := encodePayload(data, text, d.contentBudget())
	return &ReadBlobResult{
		BlobID: info.ID, Kind: info.Kind, SizeBytes: info.Size, Encoding: pl.Encoding, Content: pl.Content,
		Truncated: truncated || n < len(data),
	}, nil
}

// sampleLimit is the most raw bytes one read_blob response can carry:
// base64 grows data by a third, and text is assumed to need little escaping
// (encodePayload still cuts it to the budget).
func (d *Dispatcher) sampleLimit(text bool) int64 {
	budget := int64(d.contentBudget())
	if text {
		return budget
	}
	return budget / 4 * 3
}
