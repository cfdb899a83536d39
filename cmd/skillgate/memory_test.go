package main

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
)

// Free heap is returned to the operating system past 16 MiB, not at it,
// and the gateway says so at debug level.
func TestReleaseIfPiledUp(t *testing.T) {
	var logs bytes.Buffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	assert.False(t, releaseIfPiledUp(releaseThreshold, log))
	assert.Empty(t, logs.String())
	assert.True(t, releaseIfPiledUp(releaseThreshold+1, log))
	assert.JSONEq(t, `{"level":"debug","free_bytes":16777217,"message":"returned free heap memory to the operating system"}`, logs.String())
}
