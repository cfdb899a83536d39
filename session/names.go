package session

import "sync"

// Method names repeat on every request; interning them saves an allocation
// a request. The table is bounded, so a peer inventing names cannot grow it.
const maxInterned = 256

var (
	namesMu sync.RWMutex
	names   = make(map[string]string)
)

func methodName(b []byte) string {
	namesMu.RLock()
	s, ok := names[string(b)]
	namesMu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	namesMu.Lock()
	if len(names) < maxInterned {
		names[s] = s
	}
	namesMu.Unlock()
	return s
}
