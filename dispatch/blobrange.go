package dispatch

import (
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/skillgate/skillgate/blob"
)

// ReadBlobRangeResult is the result of read_blob in mode "range": a piece
// of the blob from offset, and where the next piece starts (null after
// the last). Decoding the pieces in order and joining them gives the blob;
// base64 pieces other than the last hold a multiple of 3 bytes, so their
// texts also join into the base64 of the whole blob. SHA256 is the whole
// blob's, so that a reader checks what it joined.
type ReadBlobRangeResult struct {
	ReadBlobResult
	SHA256     string `json:"sha256"`
	Offset     int64  `json:"offset"`
	NextOffset *int64 `json:"next_offset"`
}

// readRange answers mode "range": at most maxBytes (default
// DefaultSampleBytes, at most what one response carries) from offset.
func (d *Dispatcher) readRange(b blob.Blob, offset, maxBytes, limit int64) (any, error) {
	info := b.Info()
	if offset > info.Size {
		return nil, paramErr("offset", "is past the end of the blob: it holds "+strconv.FormatInt(info.Size, 10)+" bytes")
	}
	want := int64(DefaultSampleBytes)
	if maxBytes > 0 {
		want = maxBytes
	}
	n := min(want, limit, info.Size-offset)
	data := make([]byte, n)
	if k, err := b.ReadAt(data, offset); err != nil && !(err == io.EOF && int64(k) == n) {
		return nil, err
	}
	text := blob.IsTextKind(info.Kind)
	if text && offset+n < info.Size {
		data = trimCutRune(data)
	}
	pl, sent := encodePayload(data, text, d.contentBudget())
	if pl.Encoding == EncodingBase64 && offset+int64(sent) < info.Size && sent%3 != 0 && sent >= 3 {
		sent -= sent % 3
		pl.Content = pl.Content[:sent/3*4]
	}
	// Whatever cut the piece short (max_bytes, a character left whole, the
	// response's budget, base64's groups of 3), truncated says the same as
	// next_offset: more follows.
	next := offset + int64(sent)
	more := next < info.Size
	res := &ReadBlobRangeResult{
		ReadBlobResult: ReadBlobResult{BlobID: info.ID, Kind: info.Kind, SizeBytes: info.Size,
			Encoding: pl.Encoding, Content: pl.Content, Truncated: more},
		SHA256: info.SHA256,
		Offset: offset,
	}
	if more {
		res.NextOffset = &next
	}
	return res, nil
}

// trimCutRune drops a UTF-8 sequence cut at the end of a piece, so a text
// piece stays valid text; the next piece starts with the whole sequence.
func trimCutRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) || i == 0 {
				return b
			}
			return b[:i]
		}
	}
	return b
}
