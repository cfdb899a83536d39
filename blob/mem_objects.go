package blob

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// memObjects is the Objects space of a MemStore.
type memObjects struct {
	now  func() time.Time
	mu   sync.Mutex
	objs map[string]memObject // guarded by mu
}

type memObject struct {
	data []byte
	mod  time.Time
}

func (o *memObjects) PutObject(ctx context.Context, key string, r io.Reader) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("put object: %w", err)
	}
	data, err := io.ReadAll(ctxReader{ctx, r})
	if err != nil {
		return fmt.Errorf("put object %s: %w", key, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.objs[key] = memObject{data: data, mod: o.now().UTC()}
	return nil
}

func (o *memObjects) CreateObject(_ context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("create object: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.objs[key]; ok {
		return fmt.Errorf("create object %s: %w", key, ErrObjectExists)
	}
	o.objs[key] = memObject{data: bytes.Clone(data), mod: o.now().UTC()}
	return nil
}

func (o *memObjects) GetObject(_ context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("get object: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	obj, ok := o.objs[key]
	if !ok {
		return nil, ObjectInfo{}, fmt.Errorf("get object %s: %w", key, ErrObjectNotFound)
	}
	info := ObjectInfo{Key: key, Size: int64(len(obj.data)), Modified: obj.mod}
	return io.NopCloser(bytes.NewReader(obj.data)), info, nil
}

func (o *memObjects) ListObjects(_ context.Context, prefix string) ([]ObjectInfo, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []ObjectInfo
	for k, obj := range o.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, ObjectInfo{Key: k, Size: int64(len(obj.data)), Modified: obj.mod})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (o *memObjects) DeleteObject(_ context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("delete object: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.objs, key)
	return nil
}
