package s3blob

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/skillgate/skillgate/blob"
)

// Sweep implements blob.Store: expired blobs this process does not hold
// open, then staging objects and incomplete multipart uploads past
// StagingTTL. It also refreshes Usage from the listing.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	now := s.opts.Now()
	removed, count, bytes := 0, 0, int64(0)
	for oi := range s.c.ListObjects(ctx, s.opts.Bucket, minio.ListObjectsOptions{Prefix: s.root + "blobs/", Recursive: true}) {
		if oi.Err != nil {
			return removed, fmt.Errorf("sweep blobs: %w", oi.Err)
		}
		id := "blob:" + oi.Key[strings.LastIndex(oi.Key, "/")+1:]
		if s.opts.TTL > 0 && !now.Before(oi.LastModified.Add(s.opts.TTL)) && !s.leased(id) {
			if err := s.c.RemoveObject(ctx, s.opts.Bucket, oi.Key, minio.RemoveObjectOptions{}); err != nil {
				return removed, fmt.Errorf("sweep blobs: %w", err)
			}
			removed++
			continue
		}
		count++
		bytes += oi.Size
	}
	s.mu.Lock()
	s.count, s.bytes = count, bytes
	s.mu.Unlock()
	if removed > 0 {
		s.log.Debug().Int("removed", removed).Msg("expired blobs removed")
	}
	return removed, s.sweepStaging(ctx, now.Add(-s.opts.StagingTTL))
}

func (s *Store) leased(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leases[id] > 0
}

// sweepStaging removes what writers that died left behind.
func (s *Store) sweepStaging(ctx context.Context, cutoff time.Time) error {
	prefix := s.root + "tmp/"
	for oi := range s.c.ListObjects(ctx, s.opts.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			return fmt.Errorf("sweep staging: %w", oi.Err)
		}
		if oi.LastModified.Before(cutoff) {
			_ = s.c.RemoveObject(ctx, s.opts.Bucket, oi.Key, minio.RemoveObjectOptions{})
		}
	}
	// Multipart uploads of killed writers: staged ones under tmp/, and
	// direct ones under blobs/ (a Put that knew its digest).
	for up := range s.c.ListIncompleteUploads(ctx, s.opts.Bucket, s.root, true) {
		if up.Err != nil {
			return fmt.Errorf("sweep staging uploads: %w", up.Err)
		}
		if up.Initiated.Before(cutoff) {
			_ = s.c.RemoveIncompleteUpload(ctx, s.opts.Bucket, up.Key)
		}
	}
	return ctx.Err()
}

// objects is the Objects space under <prefix>/kv/.
type objects struct{ s *Store }

func (o objects) key(k string) string { return o.s.root + "kv/" + k }

var _ blob.Objects = objects{}
