package runerror

import "testing"

// The error types are wire values of every run result and of stored run
// records: a rename here must be a protocol change, never an accident.
func TestWireValues(t *testing.T) {
	for got, want := range map[string]string{
		Timeout: "EXECUTION_TIMEOUT", MemoryLimit: "MEMORY_LIMIT_EXCEEDED", OutputTooLarge: "OUTPUT_TOO_LARGE",
		Sandbox: "SANDBOX_ERROR", InvalidOutput: "INVALID_OUTPUT", Validation: "VALIDATION_ERROR",
		Canceled: "CANCELLED", Interrupted: "INTERRUPTED", StorageFull: "STORAGE_FULL", BlobError: "BlobError",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
	if RetryDelayMS != 1000 || RetryAttempts != 2 {
		t.Errorf("retry hint %d ms × %d, want 1000 ms × 2", RetryDelayMS, RetryAttempts)
	}
}
