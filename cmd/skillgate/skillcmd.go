package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/skills"
)

func newSkillCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skill",
		Short: "Work with skill packages on disk",
	}
	var maxFiles int
	var maxBytes int64
	var py serveConfig
	check := &cobra.Command{
		Use:   "check DIR...",
		Short: "Validate skill packages offline, as the gateway would load them",
		Long: "check loads every package under each DIR (a skills root or one package folder) the way\n" +
			"`skillgate serve` does and prints, one JSON line per package that is not plainly valid, its\n" +
			"problems in the VALIDATION_ERROR shape of the error classes: an invalid package as an\n" +
			"\"error\" (it would be skipped), a package that loads with warnings as a \"warning\". A summary\n" +
			"goes to stderr. It exits 1 when any package is invalid or a DIR holds none, 2 when a DIR\n" +
			"cannot be read. With --python-find-links or --python-index-url it also builds (in a\n" +
			"temporary folder) the Python environments the packages declare, so that pip's reason for\n" +
			"a requirement it cannot install is among the violations.",
		Example: "  skillgate skill check examples/skills\n  skillgate skill check ./my-skill | jq .\n" +
			"  skillgate skill check --python-find-links ./wheelhouse ./my-skill",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := skills.Options{MaxSkillFiles: maxFiles, MaxSkillBytes: maxBytes}
			if errs := py.validatePython(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			if py.hasPythonSources() {
				b, err := pyenv.New(py.pythonSources())
				if err != nil {
					return err
				}
				defer b.Close()
				opts.Environments = b
			}
			bad := false
			for _, dir := range args {
				rep, err := skills.Check(dir, opts)
				if err != nil {
					return err
				}
				invalid, err := printCheckReport(cmd.OutOrStdout(), rep)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d packages: %d valid, %d with warnings, %d invalid\n",
					dir, len(rep.Packages), len(rep.Packages)-invalid, withWarnings(rep), invalid)
				bad = bad || invalid > 0 || len(rep.Packages) == 0
			}
			if bad {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	check.Flags().IntVar(&maxFiles, "max-skill-files", skills.DefaultMaxSkillFiles, "files one package may hold (as serve's flag)")
	check.Flags().Int64Var(&maxBytes, "max-skill-bytes", skills.DefaultMaxSkillBytes, "bytes one package may hold (as serve's flag)")
	check.Flags().StringSliceVar(&py.PythonFindLinks, "python-find-links", nil, "wheelhouse folder or URL to build the packages' Python environments from (as serve's flag)")
	check.Flags().StringVar(&py.PythonIndexURL, "python-index-url", "", "package index to build the packages' Python environments from (as serve's flag)")
	check.Flags().StringVar(&py.Python, "python", pyenv.DefaultPython, "the interpreter whose pip builds the environments (as serve's flag)")
	cmd.AddCommand(check)
	return cmd
}

// checkLine is one package's problems in the error classes' unified shape.
type checkLine struct {
	Error   *checkProblem `json:"error,omitempty"`
	Warning *checkProblem `json:"warning,omitempty"`
}

type checkProblem struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Details checkDetails `json:"details"`
}

type checkDetails struct {
	Path       string             `json:"path"`
	Name       string             `json:"name,omitempty"`
	Version    string             `json:"version,omitempty"`
	Violations []skills.Violation `json:"violations"`
}

// printCheckReport writes a line per package with violations or warnings
// and returns how many packages are invalid.
func printCheckReport(w io.Writer, rep skills.LoadReport) (int, error) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	invalid := 0
	for _, p := range rep.Packages {
		d := checkDetails{Path: p.Dir, Name: p.Name, Version: p.Version}
		var line checkLine
		switch {
		case p.Status != skills.StatusLoaded:
			invalid++
			d.Violations = p.Violations
			line.Error = &checkProblem{Code: runerror.Validation, Message: "skill package is invalid and would be skipped", Details: d}
		case len(p.Warnings) > 0:
			d.Violations = p.Warnings
			line.Warning = &checkProblem{Code: runerror.Validation, Message: "skill package loads with warnings", Details: d}
		default:
			continue
		}
		if err := enc.Encode(line); err != nil {
			return invalid, err
		}
	}
	return invalid, nil
}

func withWarnings(rep skills.LoadReport) int {
	n := 0
	for _, p := range rep.Packages {
		if p.Status == skills.StatusLoaded && len(p.Warnings) > 0 {
			n++
		}
	}
	return n
}
