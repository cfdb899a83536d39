package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/dispatch/auth"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "skillgate",
		Short:         "A gateway serving the Skills Protocol over framed JSON-RPC, TLS and HTTP",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newMCPCommand(), newCallCommand(), newRunsCommand(), newBlobCommand(), newSkillCommand(), newTokenCommand(), newVersionCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			rev := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = s.Value
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "skillgate %s (%s, %s/%s, revision %s)\n",
				buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, rev)
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
