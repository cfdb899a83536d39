package testlog

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBufferCollectsConcurrentLines(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = b.Write([]byte(`{"n":` + string(rune('0'+i)) + "}\n"))
		}()
	}
	wg.Wait()
	recs, err := b.Records()
	require.NoError(t, err)
	assert.Len(t, recs, 8)
	assert.Equal(t, b.String(), string(b.Bytes()))
}

func TestBufferRecordsRefusesWhatIsNotJSON(t *testing.T) {
	var b Buffer
	recs, err := b.Records()
	require.NoError(t, err)
	assert.Empty(t, recs)
	_, _ = b.Write([]byte("{\"a\":1}\nplain text\n"))
	_, err = b.Records()
	assert.ErrorContains(t, err, "plain text")
}
