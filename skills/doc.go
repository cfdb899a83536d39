// Package skills holds the skill registry (skill packages loaded from disk,
// validated, versioned and served as immutable snapshots), the built-in
// Skills Protocol guide. Blobs live in package blob.
//
// # Skill packages
//
// A Registry searches its root folder at any depth. A folder holding
// skill.toml or SKILL.md is a skill and is not searched further (its
// sub-folders belong to its snapshot); other folders are searched. Hidden
// names (".git", ".x.swp"), names ending in "~" and "__pycache__" are never
// read, and symlinked folders are not followed during the search.
//
// A skill.toml package is decoded strictly (unknown keys are violations):
//
//	name        dotted lowercase, >= 2 segments of [a-z][a-z0-9]*, no Python
//	            keyword segment, <= 128 bytes; namespace "skills" reserved
//	version     semantic version 2.0.0
//	description one non-empty line, <= 1024 bytes
//	kind        "action" or "instruction"
//	[runtime]   action only: language "python"; entrypoint a clean relative
//	            .py path that exists in the package and whose segments are
//	            Python identifiers (it is imported as a module); export a
//	            Python identifier; timeout_ms optional, a positive integer;
//	            cpus optional, a number of CPUs from 0.01 to 1024;
//	            requirements optional, PEP 508 strings (no URLs or paths);
//	            preload optional, Python module names
//	[permissions] secrets: environment variable names [A-Z_][A-Z0-9_]*
//
// A requirements.txt beside skill.toml (pip's format; only --hash as an
// option) adds to the requirements. A skill with requirements is offered
// once its Python environment (package pyenv) is built: the registry
// builds it off the reload path, Resolve answers a *BuildingError
// meanwhile, and a failed build skips the skill with pip's reason.
//
// Its SKILL.md opens with YAML front matter holding name (display name) and
// short_description (strings) and optionally tags (list of strings); other
// keys are kept. A folder with only an Agent Skills SKILL.md (front matter
// name = folder name, 1-64 of [a-z0-9-] without leading, trailing or double
// hyphens; description <= 1024; optional license, compatibility <= 500,
// metadata string map, allowed-tools) is served as an instruction skill whose
// version is metadata.version when that is a semantic version, else 0.0.0.
//
// Every violation of a package is collected (never only the first), each as
// a Violation {file, field (JSON pointer), expected, actual, message}, and
// logged on one line with the package path. Invalid packages are skipped.
//
// # Snapshots
//
// Loading reads every file of a package into memory with its size and
// sha256, through an os.Root so that nothing outside the folder can be
// read: a symlink to a regular file inside the package is served with the
// target's content; any other symlink (outside, absolute, to a folder,
// dangling) is skipped with a warning and ReadFile refuses its path.
// Limits: 512 files and 16 MiB per package by default. A snapshot never
// changes once built; a Skill is one (name, version).
//
// # Catalogs and reloads
//
// A Catalog is an immutable index; the Registry swaps a new one in on every
// Reload (called on demand, on SIGHUP by the binary, and by the optional
// fsnotify watcher). A call that took a Catalog keeps it to the end.
// Several versions of a name coexist; the latest is the highest semver
// precedence. Rules applied at each reload:
//   - a folder whose new content is invalid keeps serving the snapshot last
//     read from it while valid (status kept_previous), and the violations
//     are logged;
//   - when two folders define the same (name, version), the folder whose
//     path sorts first (bytewise) serves it; the other is skipped with a
//     violation naming the winner, and the winner gets a warning naming it;
//   - built-in skills (namespace "skills") cannot be shadowed: packages on
//     disk may not use that namespace.
//
// List pages by name, one entry per name (its latest version), with opaque
// cursors that carry the last name returned, so a cursor stays valid across
// reloads.
package skills
