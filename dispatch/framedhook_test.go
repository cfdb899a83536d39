package dispatch_test

import (
	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/framedfront"
	"github.com/skillgate/skillgate/session"
)

func init() {
	dispatch.SetFramedHandler(func(d *dispatch.Dispatcher, cfg *session.Config) session.Handler {
		framedfront.Configure(cfg)
		return framedfront.New(d)
	})
}
