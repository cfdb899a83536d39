package blob

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFSStoreConcurrentPutsIntoANewShard: Puts that race to create the
// same shard folder all succeed (the loser of the mkdir finds the folder
// there). 256 shards, 4 Puts each, released at once.
func TestFSStoreConcurrentPutsIntoANewShard(t *testing.T) {
	s := openFS(t, t.TempDir(), FSOptions{})
	defer s.Close()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for shard := range 256 {
		for i := range 4 {
			id := fmt.Sprintf("blob:%02x%030x", shard, i)
			wg.Go(func() {
				<-start
				_, err := s.Put(context.Background(), id, PutOptions{Kind: "text/plain"}, strings.NewReader(id))
				assert.NoError(t, err, id)
			})
		}
	}
	close(start)
	wg.Wait()
	count, _ := s.Usage()
	assert.Equal(t, 1024, count)
}
