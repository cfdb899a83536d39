package blob

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// RunJanitor calls sweep every interval until stop is closed, then closes
// done. Every backend with a TTL runs one; a failed sweep is logged and
// tried again at the next tick, since expiry is best effort between ticks.
func RunJanitor(stop <-chan struct{}, done chan<- struct{}, interval time.Duration,
	sweep func(context.Context) (int, error), log zerolog.Logger) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if _, err := sweep(context.Background()); err != nil {
				log.Warn().Err(err).Msg("blob janitor")
			}
		}
	}
}
