package blob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// headerSize is the room before a blob's content in its file.
const headerSize = 512

var headerMagic = []byte("SKILLGATE-BLOB 1\n")

// blobHeader is the on-disk metadata, kept apart from Info's wire tags
// so the file format changes only on purpose.
type blobHeader struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created"`
	// Owner is absent in files written before blobs had owners.
	Owner string `json:"owner,omitempty"`
}

// encodeHeader renders magic + JSON metadata, padded with spaces to
// headerSize and ending in a newline (so `head -c 512` shows it).
func encodeHeader(info Info) ([]byte, error) {
	var b bytes.Buffer
	b.Write(headerMagic)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(blobHeader(info)); err != nil {
		return nil, err
	}
	if b.Len() > headerSize {
		return nil, fmt.Errorf("blob metadata exceeds %d bytes: %w", headerSize, ErrInvalidKind)
	}
	out := make([]byte, headerSize)
	copy(out, b.Bytes())
	for i := b.Len(); i < headerSize-1; i++ {
		out[i] = ' '
	}
	out[headerSize-1] = '\n'
	return out, nil
}

// readHeaderFile reads and checks the header of the blob file at p: magic,
// metadata for id, and a file size that matches the recorded size.
func readHeaderFile(p, id string) (Info, error) {
	f, err := os.Open(p)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, err
	}
	hdr := make([]byte, headerSize)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return Info{}, fmt.Errorf("blob header: %w", err)
	}
	info, err := decodeHeader(hdr, id)
	if err != nil {
		return Info{}, err
	}
	if fi.Size() != headerSize+info.Size {
		return Info{}, fmt.Errorf("blob file holds %d bytes, header says %d", fi.Size()-headerSize, info.Size)
	}
	return info, nil
}

func decodeHeader(hdr []byte, id string) (Info, error) {
	rest, ok := bytes.CutPrefix(hdr, headerMagic)
	if !ok {
		return Info{}, fmt.Errorf("blob header: bad magic")
	}
	var h blobHeader
	if err := json.Unmarshal(bytes.TrimRight(rest, " \n"), &h); err != nil {
		return Info{}, fmt.Errorf("blob header: %w", err)
	}
	info := Info(h)
	_, kerr := NormalizeKind(info.Kind)
	switch {
	case info.ID != id:
		return Info{}, fmt.Errorf("blob header names %q", info.ID)
	case kerr != nil:
		return Info{}, kerr
	case info.Size < 0 || len(info.SHA256) != 64 || info.Created.IsZero():
		return Info{}, fmt.Errorf("blob header: incomplete metadata")
	}
	return info, nil
}
