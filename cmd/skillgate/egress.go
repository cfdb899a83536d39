package main

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/egress"
	"github.com/skillgate/skillgate/egress/hostpattern"
	"github.com/skillgate/skillgate/metrics"
)

// minEgressHeaderBytes is the smallest --egress-max-header-bytes: room
// for a CONNECT line and a Host header of long names.
const minEgressHeaderBytes = 1024

func registerEgressFlags(fs *pflag.FlagSet, c *serveConfig) {
	ed := egress.DefaultConfig()
	fs.StringVar(&c.Egress, "egress", "on", "on: runs whose skill (or, for run_code, whose identity) lists network destinations reach them through the filtering proxy; off: no run has network")
	fs.StringSliceVar(&c.EgressAllow, "egress-allow", []string{"*"}, "host:port or *.domain:port patterns that cap what any run may reach (*: any public host)")
	fs.StringSliceVar(&c.EgressDeny, "egress-deny", nil, "host:port or *.domain:port patterns no run may reach")
	fs.StringSliceVar(&c.EgressPrivate, "egress-allow-private", nil, "host:port or cidr:port of private, loopback, link-local or metadata addresses runs may reach (refused otherwise)")
	fs.StringSliceVar(&c.RunCodeNetwork, "run-code-network", nil, "without --auth-file: patterns run_code may reach (default none); with one, each identity's run_code_network says")
	fs.IntVar(&c.EgressMaxConns, "egress-max-connections", ed.MaxConns, "concurrent egress connections of one run; past it the proxy answers 403")
	fs.Int64Var(&c.EgressMaxBytes, "egress-max-bytes", ed.MaxBytes, "bytes one run may move in each direction through the proxy, request headers included; past it its connections are closed")
	fs.Int64Var(&c.EgressMaxHeader, "egress-max-header-bytes", ed.MaxHeaderBytes, "bytes of one proxy request's line and headers; past it the proxy answers 431")
	fs.IntVar(&c.EgressMaxReaders, "egress-max-header-readers", ed.MaxHeaderReaders, "connections of one run whose request the proxy reads at once; the others wait for one")
}

func (c *serveConfig) validateEgress() []error {
	var errs []error
	if c.Egress != "on" && c.Egress != "off" {
		errs = append(errs, fmt.Errorf("--egress must be on or off, not %q", c.Egress))
	}
	for _, f := range []struct {
		flag string
		list []string
	}{{"--egress-allow", c.EgressAllow}, {"--egress-deny", c.EgressDeny}, {"--run-code-network", c.RunCodeNetwork}} {
		if _, err := hostpattern.ParseList(f.list); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.flag, err))
		}
	}
	if _, err := egress.ParsePrivates(c.EgressPrivate); err != nil {
		errs = append(errs, fmt.Errorf("--egress-allow-private: %w", err))
	}
	if c.EgressMaxConns < 1 || c.EgressMaxBytes < 1 {
		errs = append(errs, errors.New("--egress-max-connections and --egress-max-bytes must be positive"))
	}
	// Below a request line and a Host header no client gets through.
	if c.EgressMaxHeader < minEgressHeaderBytes || c.EgressMaxReaders < 1 {
		errs = append(errs, fmt.Errorf("--egress-max-header-bytes must be at least %d and --egress-max-header-readers positive", minEgressHeaderBytes))
	}
	return errs
}

// egress builds the runs' egress, or nil when it is off; the flags were
// validated.
func (c *serveConfig) egress(log zerolog.Logger, m *metrics.Metrics) (*dispatch.Egress, error) {
	if c.Egress == "off" {
		log.Info().Msg("egress is off (--egress=off): no run has network")
		return nil, nil
	}
	cfg := egress.DefaultConfig()
	cfg.MaxConns, cfg.MaxBytes = c.EgressMaxConns, c.EgressMaxBytes
	cfg.MaxHeaderBytes, cfg.MaxHeaderReaders = c.EgressMaxHeader, c.EgressMaxReaders
	cfg.Logger, cfg.Metrics = log, m
	proxy, err := egress.New(cfg)
	if err != nil {
		return nil, err
	}
	e := &dispatch.Egress{Proxy: proxy}
	var errs [4]error
	e.Allow, errs[0] = hostpattern.ParseList(c.EgressAllow)
	e.Deny, errs[1] = hostpattern.ParseList(c.EgressDeny)
	e.Private, errs[2] = egress.ParsePrivates(c.EgressPrivate)
	e.OpenRunCode, errs[3] = hostpattern.ParseList(c.RunCodeNetwork)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	log.Info().Strs("allow", c.EgressAllow).Strs("deny", c.EgressDeny).Strs("allow_private", c.EgressPrivate).
		Strs("run_code_network", c.RunCodeNetwork).Msg("egress through the filtering proxy")
	return e, nil
}
