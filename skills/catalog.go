package skills

import (
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/skillgate/skillgate/pyenv"
)

// List page sizes.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
	maxCursorLen     = 1024
	cursorMagic      = "c1\x00"
)

// Catalog is an immutable index of skill snapshots, safe for concurrent
// use. A Registry swaps whole catalogs on reload, so a caller holding one
// keeps a consistent view for as long as it needs.
type Catalog struct {
	names    []string            // sorted, one per name
	versions map[string][]*Skill // per name, highest precedence first
	latest   map[string]*Skill   // per name, the default version (see Latest)
	count    int
	envs     map[string]*pyenv.Env // built environments of the served skills, by key
	building map[string][]string   // per name, the versions whose environment is building
}

// newCatalog indexes skills; (name, version) pairs must be unique.
func newCatalog(skills []*Skill) *Catalog {
	c := &Catalog{versions: make(map[string][]*Skill), latest: make(map[string]*Skill), count: len(skills)}
	for _, s := range skills {
		n := s.Manifest.Name
		if _, ok := c.versions[n]; !ok {
			c.names = append(c.names, n)
		}
		c.versions[n] = append(c.versions[n], s)
	}
	slices.Sort(c.names)
	for n, vs := range c.versions {
		slices.SortFunc(vs, compareSkillsDesc)
		c.latest[n] = defaultVersion(vs)
	}
	return c
}

// defaultVersion picks what a call without a version gets: the highest
// release, so that publishing 2.0.0-rc.1 next to 1.4.0 does not move
// every unpinned caller onto a release candidate; a pre-release only when
// the name has no release at all. vs is sorted highest first.
func defaultVersion(vs []*Skill) *Skill {
	for _, s := range vs {
		if !s.version.IsPrerelease() {
			return s
		}
	}
	return vs[0]
}

// compareSkillsDesc orders versions by descending precedence; equal
// precedence (build metadata only differs) falls back to the string so
// the order is total.
func compareSkillsDesc(a, b *Skill) int {
	if c := b.version.Compare(a.version); c != 0 {
		return c
	}
	return strings.Compare(b.Manifest.Version, a.Manifest.Version)
}

// Len returns the number of (name, version) snapshots.
func (c *Catalog) Len() int { return c.count }

// Names returns the number of distinct skill names.
func (c *Catalog) Names() int { return len(c.names) }

// NotFoundError is returned by Resolve; errors.Is(err, ErrSkillNotFound).
type NotFoundError struct {
	Name, Version string
	// Available lists the versions of Name that do exist, highest first
	// (empty when the name is unknown).
	Available []string
}

func (e *NotFoundError) Error() string {
	if e.Version == "" {
		return fmt.Sprintf("skill %q not found", e.Name)
	}
	if len(e.Available) == 0 {
		return fmt.Sprintf("skill %q version %q not found", e.Name, e.Version)
	}
	return fmt.Sprintf("skill %q version %q not found (available: %s)", e.Name, e.Version, strings.Join(e.Available, ", "))
}

// Is makes errors.Is(err, ErrSkillNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrSkillNotFound }

// Resolve returns the snapshot of name at version. An empty version or
// "latest" means the highest release (a pre-release only when the name has
// no release); any other version, pre-releases included, must match
// exactly as written in the manifest. It fails with a *NotFoundError, or
// a *BuildingError for a skill whose environment is still being built (an
// unpinned call gets the latest version already offered, if any).
func (c *Catalog) Resolve(name, version string) (*Skill, error) {
	vs := c.versions[name]
	if len(vs) == 0 {
		if err := c.buildingError(name, version); err != nil {
			return nil, err
		}
		return nil, &NotFoundError{Name: name, Version: version}
	}
	if version == "" || version == "latest" {
		return c.latest[name], nil
	}
	for _, s := range vs {
		if s.Manifest.Version == version {
			return s, nil
		}
	}
	if err := c.buildingError(name, version); err != nil {
		return nil, err
	}
	return nil, &NotFoundError{Name: name, Version: version, Available: c.Versions(name)}
}

// Versions lists the versions of name, highest precedence first; nil for
// an unknown name.
func (c *Catalog) Versions(name string) []string {
	vs := c.versions[name]
	if len(vs) == 0 {
		return nil
	}
	out := make([]string, len(vs))
	for i, s := range vs {
		out[i] = s.Manifest.Version
	}
	return out
}

// All returns every snapshot ordered by name, then by descending version.
func (c *Catalog) All() []*Skill {
	out := make([]*Skill, 0, c.count)
	for _, n := range c.names {
		out = append(out, c.versions[n]...)
	}
	return out
}

// ListQuery selects a page of List.
type ListQuery struct {
	// Namespace keeps names equal to it or under it as a whole dotted
	// prefix: "acme" matches acme.x.y, not acmecorp.x. Empty keeps all.
	Namespace string
	// Limit is the page size: <= 0 means DefaultListLimit, larger than
	// MaxListLimit is clamped.
	Limit int
	// Cursor is the NextCursor of a previous page of the same Namespace,
	// or empty for the first page.
	Cursor string
}

// ListPage is one page of List.
type ListPage struct {
	// Skills holds the default version of each name (what Resolve gives
	// without a version), sorted by name.
	Skills []*Skill
	// NextCursor continues after the last skill; "" on the last page.
	NextCursor string
}

// List pages through the catalog by name, one entry per name (its latest
// version; others are reachable through Resolve and Versions). A cursor
// carries the last name returned, not a position, so it stays valid across
// reloads: the next page starts at the first name after it in whatever
// catalog serves the call, with no duplicates, and names added or removed
// in between appear or disappear as they sort. A cursor that was not made
// by List, or was made for another namespace, fails with ErrInvalidCursor.
func (c *Catalog) List(q ListQuery) (ListPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	after := ""
	if q.Cursor != "" {
		var err error
		if after, err = decodeCursor(q.Cursor, q.Namespace); err != nil {
			return ListPage{}, fmt.Errorf("list skills: %w", err)
		}
	}
	// Names under the namespace all start with it as a string, so the scan
	// starts at the first such name and stops at the first that doesn't.
	start := max(after, q.Namespace)
	i := sort.Search(len(c.names), func(i int) bool {
		n := c.names[i]
		return n >= start && (after == "" || n > after)
	})
	page := ListPage{Skills: make([]*Skill, 0, min(limit, len(c.names)-i))}
	for ; i < len(c.names) && strings.HasPrefix(c.names[i], q.Namespace); i++ {
		n := c.names[i]
		if !inNamespace(n, q.Namespace) {
			continue
		}
		if len(page.Skills) == limit {
			page.NextCursor = encodeCursor(q.Namespace, page.Skills[limit-1].Manifest.Name)
			break
		}
		page.Skills = append(page.Skills, c.latest[n])
	}
	return page, nil
}

// encodeCursor makes an opaque cursor: base64url of magic, namespace and
// the last name returned.
func encodeCursor(ns, last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorMagic + ns + "\x00" + last))
}

// decodeCursor returns the last name of a cursor made by encodeCursor for
// namespace ns.
func decodeCursor(cur, ns string) (string, error) {
	if len(cur) > maxCursorLen {
		return "", fmt.Errorf("cursor too long: %w", ErrInvalidCursor)
	}
	raw, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil {
		return "", fmt.Errorf("cursor is not base64url: %w", ErrInvalidCursor)
	}
	s, ok := strings.CutPrefix(string(raw), cursorMagic)
	if !ok {
		return "", fmt.Errorf("unknown cursor format: %w", ErrInvalidCursor)
	}
	i := strings.LastIndexByte(s, 0)
	if i < 0 {
		return "", fmt.Errorf("truncated cursor: %w", ErrInvalidCursor)
	}
	if s[:i] != ns {
		return "", fmt.Errorf("cursor belongs to another namespace: %w", ErrInvalidCursor)
	}
	last := s[i+1:]
	if !plausibleName(last) || !inNamespace(last, ns) {
		return "", fmt.Errorf("cursor holds no skill name: %w", ErrInvalidCursor)
	}
	return last, nil
}
