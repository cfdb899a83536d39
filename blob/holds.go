package blob

import (
	"context"
	"encoding/json"
	"strings"
)

// holder is a store that counts the chunks of unfinished uploads against
// its quotas (FSStore, MemStore). A store that does not (an S3 bucket,
// where a bucket quota counts every object) leaves them uncounted.
type holder interface {
	// holdUpload counts n more bytes of upload's chunks of owner against
	// the store's and the owner's quota (a *StorageFullError past one).
	holdUpload(upload, owner string, n, ownerQuota int64) error
	// unholdUpload gives back n bytes of upload's hold, or all of it when
	// n < 0.
	unholdUpload(upload string, n int64)
	// PendingUsage is the bytes unfinished uploads hold.
	PendingUsage() int64
}

func (s *FSStore) holdUpload(upload, owner string, n, ownerQuota int64) error {
	return s.idx.hold(upload, owner, n, ownerQuota, true)
}

func (s *FSStore) unholdUpload(upload string, n int64) { s.idx.unhold(upload, n) }

// PendingUsage is the bytes the chunks of unfinished uploads hold.
func (s *FSStore) PendingUsage() int64 { return s.idx.pendingUsage() }

func (s *MemStore) holdUpload(upload, owner string, n, ownerQuota int64) error {
	return s.idx.hold(upload, owner, n, ownerQuota, true)
}

func (s *MemStore) unholdUpload(upload string, n int64) { s.idx.unhold(upload, n) }

// PendingUsage is the bytes the chunks of unfinished uploads hold.
func (s *MemStore) PendingUsage() int64 { return s.idx.pendingUsage() }

// scanUploads holds, for every unfinished upload in the Objects space,
// the bytes of its stored chunks, so that a restart does not forget what
// pending uploads occupy. An upload whose metadata is unreadable is left
// to the upload sweep.
func (s *FSStore) scanUploads() {
	ctx := context.Background()
	objs, err := s.obj.ListObjects(ctx, uploadsPrefix)
	if err != nil {
		s.log.Warn().Err(err).Msg("listing unfinished uploads at open")
		return
	}
	sizes := map[string]int64{}
	for _, o := range objs {
		h, name, _ := strings.Cut(strings.TrimPrefix(o.Key, uploadsPrefix), "/")
		if strings.HasPrefix(name, chunkPrefix) {
			sizes[h] += o.Size
		}
	}
	for h, n := range sizes {
		rc, _, err := s.obj.GetObject(ctx, uploadsPrefix+h+"/"+uploadMetaName)
		if err != nil {
			continue
		}
		var m uploadMeta
		err = json.NewDecoder(rc).Decode(&m)
		_ = rc.Close()
		if err == nil {
			_ = s.idx.hold(uploadIDPrefix+h, m.Owner, n, 0, false)
		}
	}
}
