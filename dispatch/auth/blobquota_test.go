package auth

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBlobStoreBytes(t *testing.T) {
	pol, err := Parse([]byte(expand(identity+"    limits: {blob_store_bytes: 1_073_741_824}\n")), ParseOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), pol.Identity("a").Limits().BlobStoreBytes)

	for _, bad := range []string{"-1", "1.5", `"1GiB"`, "1125899906842625", "[1]", ".inf"} {
		t.Run(bad, func(t *testing.T) {
			_, err := Parse([]byte(expand(identity+"    limits: {blob_store_bytes: "+bad+"}\n")), ParseOptions{})
			var fe *FileError
			require.True(t, errors.As(err, &fe), "%v", err)
			assertProblems(t, fe.Problems, []string{"identities[0].limits.blob_store_bytes: must be a whole number of bytes from 0 (unlimited) to 1125899906842624"})
		})
	}
}
