// Package pyenv builds the Python environments that skills declare: it
// parses requirement lists (PEP 508 strings and the requirements-file
// format), computes their content address, and installs them with the
// sandbox interpreter's own pip, from wheels only, into read-only
// directories under the data dir that runs see before the host's
// packages.
//
// An environment's directory is its identity: it exists exactly when its
// build completed (a build works in a temporary directory and renames it
// into place), so a restart or a reload that asks for the same
// requirements finds it and builds nothing. Directories that no owner
// retains are removed, but never while a run holds them.
//
// pyenv knows nothing of skills or runs: the skill registry asks it for
// the environment of a requirement list, dispatch turns the directories
// of a run's environments into the sandbox's Environment.
package pyenv
