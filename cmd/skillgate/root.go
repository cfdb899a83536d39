package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/dispatch/auth"
)

// version and commit are set at build time with -ldflags
// "-X main.version=... -X main.commit=..." (make build, make dist, the
// container image); a plain go build falls back to the build info.
var version, commit = "", ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// buildCommit is the commit the binary was built from: -X main.commit, else
// the vcs.revision go build records from a git checkout (with "-dirty" for
// uncommitted changes), else "unknown" (-buildvcs=false, a source tarball).
func buildCommit() string {
	if commit != "" {
		return commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return "unknown"
	case dirty:
		return rev + "-dirty"
	}
	return rev
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "skillgate",
		Short:         "A gateway serving the Skills Protocol over framed JSON-RPC, TLS and HTTP",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newMCPCommand(), newCallCommand(), newRunsCommand(), newBlobCommand(), newSkillCommand(), newTokenCommand(), newVersionCommand())
	root.AddCommand(newCertCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "skillgate %s (%s, %s/%s, commit %s)\n",
				buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, buildCommit())
		},
	}
}

func newTokenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "token",
		Short: "Generate a client token and the hash that goes in the auth file",
		Long: "Print a new random bearer token and its hash. Give the token to the client (never store it);\n" +
			"put the hash in an identity's tokens list in --auth-file.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := auth.NewToken()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token: %s\nhash:  %s\n", tok, auth.HashToken(tok))
			return nil
		},
	}
}
