package sandbox

// testHooks are the faults and overrides only tests set, through
// newHooked: they stay out of Config, which operators fill, so that no
// configuration can reach them. The zero value is production.
type testHooks struct {
	// breakTemplate makes the template fail at start: tests cover the
	// fallback of TemplateAuto.
	breakTemplate bool
	// breakJobDir gives a template's sandboxes a job directory that does
	// not exist: tests cover a job process whose set-up fails.
	breakJobDir bool
	// startFault, when it returns an error, fails a sandbox start with it:
	// tests cover runs waiting on starts that fail.
	startFault func() error
	// forceRlimits makes a Runner limit memory and processes with rlimits
	// even where it could use cgroups: tests cover that path as root too.
	forceRlimits bool
	// hostEtcDir replaces the host's /etc as the source of the runs'
	// system view (tests add a CA without touching the host's store).
	hostEtcDir string
}

// hostEtc is where the runs' system view is copied from.
func (h *testHooks) hostEtc() string {
	if h.hostEtcDir != "" {
		return h.hostEtcDir
	}
	return "/etc"
}
