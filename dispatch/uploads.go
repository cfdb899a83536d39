package dispatch

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/transport"
)

// Upload method names.
const (
	MethodBeginUpload  = "begin_upload"
	MethodUploadChunk  = "upload_chunk"
	MethodFinishUpload = "finish_upload"
)

// uploadErrors is the part of the blob group's table for uploads.
func uploadErrors() errorTable {
	return errorTable{
		{blob.ErrUploadNotFound, func(err error) *transport.Error {
			return &transport.Error{Code: transport.CodeInvalidParams, Message: "Upload not found.",
				StringCode: StringUploadNotFound, Details: err.Error() +
					"; an upload is gone once finished, and expires an hour after its last chunk"}
		}},
		{blob.ErrUploadFinishing, func(err error) *transport.Error {
			return (&ParamError{Param: "upload_id", Reason: "cannot be finished now: " + err.Error() +
				"; that call answers with the blob, and the upload is gone once it has"}).wire()
		}},
		{blob.ErrInvalidUpload, func(err error) *transport.Error {
			return (&ParamError{Param: "offset", Reason: "cannot be taken: " + err.Error()}).wire()
		}},
		{blob.ErrChecksumMismatch, func(err error) *transport.Error {
			return (&ParamError{Param: "sha256", Reason: "does not match: " + err.Error() + "; nothing was kept"}).wire()
		}},
	}
}

// BeginUploadResult is the result of begin_upload.
type BeginUploadResult struct {
	UploadID      string `json:"upload_id"`
	MaxChunkBytes int64  `json:"max_chunk_bytes"`
}

// chunkLimit is the largest chunk: the store's, and what one message can
// carry as base64.
func (d *Dispatcher) chunkLimit() int64 {
	return min(d.uploads.MaxChunkBytes(), int64(d.contentBudget())/4*3)
}

func (d *Dispatcher) beginUpload(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	kind := p.RequiredString("kind")
	size := p.Int("size_bytes", -1, 0, 1<<62)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, paramErr("size_bytes", "is required: the blob's size in bytes")
	}
	id, err := d.uploads.Begin(ctx, blobOwner(call), kind, size)
	switch {
	case errors.Is(err, blob.ErrInvalidKind):
		return nil, paramErr("kind", "must be a MIME type such as text/plain, text/csv or application/json")
	case errors.Is(err, blob.ErrTooLarge):
		return nil, transport.AppError(StringBlobTooLarge, "The blob is larger than the gateway accepts.").WithDetails(err.Error())
	case err != nil:
		return nil, err
	}
	return &BeginUploadResult{UploadID: id, MaxChunkBytes: d.chunkLimit()}, nil
}

// UploadChunkResult is the result of upload_chunk.
type UploadChunkResult struct {
	ReceivedBytes int64 `json:"received_bytes"`
}

func (d *Dispatcher) uploadChunk(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	id := p.RequiredString("upload_id")
	offset := p.Int("offset", -1, 0, 1<<62)
	content := p.str("content", true)
	encoding := p.Enum("encoding", EncodingBase64, EncodingUTF8, EncodingBase64)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, paramErr("offset", "is required: where this chunk starts in the blob")
	}
	if blob.ValidateUploadID(id) != nil {
		return nil, paramErr("upload_id", `must be an upload id such as "upload:3f2a…" as returned by begin_upload`)
	}
	data := []byte(content)
	if encoding == EncodingBase64 {
		var err error
		if data, err = base64.StdEncoding.DecodeString(content); err != nil {
			return nil, paramErr("content", `must be base64 (standard alphabet, padded); or set "encoding":"utf-8"`)
		}
	}
	if limit := d.chunkLimit(); int64(len(data)) > limit {
		return nil, paramErr("content", "holds more than max_chunk_bytes ("+strconv.FormatInt(limit, 10)+") bytes")
	}
	got, err := d.uploads.Chunk(ctx, id, blobPut(call, ""), offset, data)
	if err != nil {
		return nil, err
	}
	return &UploadChunkResult{ReceivedBytes: got}, nil
}

func (d *Dispatcher) finishUpload(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	id := p.RequiredString("upload_id")
	sum := p.RequiredString("sha256")
	if err := p.Err(); err != nil {
		return nil, err
	}
	if blob.ValidateUploadID(id) != nil {
		return nil, paramErr("upload_id", `must be an upload id such as "upload:3f2a…" as returned by begin_upload`)
	}
	if len(sum) != 64 || !isHex(sum) {
		return nil, paramErr("sha256", "must be the SHA-256 of the whole blob in 64 hex digits")
	}
	info, err := d.uploads.Finish(ctx, id, blobPut(call, ""), sum)
	if err != nil {
		return nil, err
	}
	return &CreateBlobResult{BlobID: info.ID, SizeBytes: info.Size, Kind: info.Kind, SHA256: info.SHA256}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
