package dispatch

import (
	"context"
	"errors"
	"strconv"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

// Canonical Skills Protocol method names.
const (
	MethodListSkills    = "list_skills"
	MethodDescribeSkill = "describe_skill"
	MethodReadSkillFile = "read_skill_file"
	MethodExecuteSkill  = "execute_skill"
	MethodRunCode       = "run_code"
	MethodCreateBlob    = "create_blob"
	MethodReadBlob      = "read_blob"
	MethodLoadGuide     = "load_skills_protocol_guide"
)

// CatalogSource gives the current skill catalog; *skills.Registry is one.
type CatalogSource interface {
	Catalog() *skills.Catalog
}

func skillNotFound(err error) *transport.Error {
	return &transport.Error{Code: transport.CodeInvalidParams, Message: "Skill not found.",
		StringCode: StringSkillNotFound, Details: err.Error()}
}

// discoveryGroup is the methods that read the skill catalog.
func (d *Dispatcher) discoveryGroup() methodGroup {
	// Listing, describing and the guide only read the in-memory catalog:
	// they never block and are answered on the read loop. Files can be
	// large and are read on a goroutine of their own.
	return methodGroup{
		methods: []groupMethod{
			{name: MethodListSkills, aliases: []string{"ListSkills"}, fn: d.listSkills, flags: methodInline},
			{name: MethodDescribeSkill, aliases: []string{"DescribeSkill"}, fn: d.describeSkill, flags: methodInline},
			{name: MethodReadSkillFile, aliases: []string{"ReadSkillFile"}, fn: d.readSkillFile},
			{name: MethodLoadGuide, aliases: []string{"LoadSkillsProtocolGuide"}, fn: d.loadGuide, flags: methodInline},
		},
		errors: errorTable{{skills.ErrSkillNotFound, skillNotFound}, {skills.ErrEnvironmentBuilding, environmentBuilding}},
	}
}

// SkillEntry is one skill in list_skills.
type SkillEntry struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Kind        string `json:"kind,omitempty"`
}

// ListSkillsResult is the result of list_skills (encoded by
// appendListResult).
type ListSkillsResult struct {
	Skills     []SkillEntry `json:"skills"`
	NextCursor *string      `json:"next_cursor"`
}

func (d *Dispatcher) listSkills(_ context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	q := skills.ListQuery{Namespace: p.String("namespace"), Cursor: p.String("cursor")}
	// The default entry is the Skills Protocol's: name, version,
	// description; "names" trims it, "summary" adds namespace and kind.
	detail := p.Enum("detail", detailDescription, "names", detailDescription, "summary")
	q.Limit = int(p.Int("limit", skills.DefaultListLimit, 1, 1<<31-1))
	if err := p.Err(); err != nil {
		return nil, err
	}
	page, err := d.visiblePage(call, q)
	if errors.Is(err, skills.ErrInvalidCursor) {
		return nil, paramErr("cursor", "is not a cursor returned by list_skills for this namespace")
	}
	if err != nil {
		return nil, err
	}
	return listResult{page: page, description: detail != "names", summary: detail == "summary"}, nil
}

// detailDescription is list_skills' default detail.
const detailDescription = "description"

// listResult encodes a ListSkillsResult by hand, straight into the response
// frame (transport.Appender): list_skills is the hottest discovery call and
// reflection would cost more than the listing.
type listResult struct {
	page                 skills.ListPage
	description, summary bool
}

func (r listResult) AppendJSON(dst []byte) []byte {
	page, summary := r.page, r.summary
	dst = append(dst, `{"skills":[`...)
	for i, s := range page.Skills {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = transport.AppendString(dst, s.Manifest.Name)
		dst = append(dst, `,"version":`...)
		dst = transport.AppendString(dst, s.Manifest.Version)
		if r.description {
			dst = append(dst, `,"description":`...)
			dst = transport.AppendString(dst, s.Summary())
		}
		if summary {
			dst = append(dst, `,"namespace":`...)
			dst = transport.AppendString(dst, s.Namespace)
			dst = append(dst, `,"kind":`...)
			dst = transport.AppendString(dst, string(s.Manifest.Kind))
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"next_cursor":`...)
	if page.NextCursor == "" {
		dst = append(dst, "null"...)
	} else {
		dst = transport.AppendString(dst, page.NextCursor)
	}
	return append(dst, '}')
}

// visiblePage lists the skills the caller may see. Each round asks the
// catalog for exactly the rows still missing and consumes the whole page,
// so the catalog's cursor stays exact however many skills are hidden.
func (d *Dispatcher) visiblePage(call *Call, q skills.ListQuery) (skills.ListPage, error) {
	cat := d.catalog()
	want := q.Limit
	var out skills.ListPage
	for {
		q.Limit = want - len(out.Skills)
		page, err := cat.List(q)
		if err != nil {
			return out, err
		}
		for _, s := range page.Skills {
			if canSee(call, s.Manifest.Name) {
				out.Skills = append(out.Skills, s)
			}
		}
		out.NextCursor = page.NextCursor
		if page.NextCursor == "" || len(out.Skills) >= want {
			return out, nil
		}
		q.Cursor = page.NextCursor
	}
}

// SeesSkill reports whether an identity may see a skill: the built-in
// guide is for everyone, and without an auth file (nil) every skill is
// seen. It is the one predicate of skill visibility: every method and
// every front door decides by it, so that they show the same skills.
func SeesSkill(id *auth.Identity, name string) bool {
	return name == skills.GuideName || id == nil || id.SeesSkill(name)
}

// canSee reports whether the caller may see a skill.
func canSee(call *Call, name string) bool { return SeesSkill(call.Identity, name) }

// checkSkill refuses a skill the caller may not see, before it is looked
// up, so that the answer does not tell whether the skill exists.
func checkSkill(call *Call, name string) error {
	if canSee(call, name) {
		return nil
	}
	return call.Identity.CheckSkill(name) // the refusal, with its reason
}

// SkillDescription is the "skill" of describe_skill; fields beyond the
// manifest depend on the detail asked for.
type SkillDescription struct {
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	Manifest skills.Manifest `json:"manifest"`
	// summary and full
	Namespace        string   `json:"namespace,omitempty"`
	Kind             string   `json:"kind,omitempty"`
	Description      string   `json:"description,omitempty"`
	Title            string   `json:"title,omitempty"`
	ShortDescription string   `json:"short_description,omitempty"`
	Tags             []string `json:"tags,omitempty"`
	Versions         []string `json:"versions,omitempty"`
	Source           string   `json:"source,omitempty"`
	// Environment is the skill's Python environment (summary and full),
	// when it declares requirements or preload.
	Environment *EnvironmentDescription `json:"environment,omitempty"`
	// full
	FrontMatter map[string]any    `json:"front_matter,omitempty"`
	SkillMD     *string           `json:"skill_md,omitempty"`
	Files       []skills.FileInfo `json:"files,omitempty"`
	Digest      string            `json:"digest,omitempty"`
}

func (d *Dispatcher) describeSkill(_ context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	name, version := p.RequiredString("name"), p.String("version")
	detail := p.Enum("detail", "summary", "manifest", "summary", "full")
	if err := p.Err(); err != nil {
		return nil, err
	}
	if err := checkSkill(call, name); err != nil {
		return nil, err
	}
	cat := d.catalog()
	s, err := cat.Resolve(name, version)
	if err != nil {
		return nil, err
	}
	desc := SkillDescription{Name: s.Manifest.Name, Version: s.Manifest.Version, Manifest: s.Manifest}
	if detail != "manifest" {
		desc.Namespace, desc.Kind, desc.Description = s.Namespace, string(s.Manifest.Kind), s.Manifest.Description
		desc.Title, desc.ShortDescription, desc.Tags = s.Title, s.ShortDescription, s.Tags
		desc.Versions, desc.Source = cat.Versions(s.Manifest.Name), string(s.Source)
		desc.Environment = d.describeEnvironment(s)
	}
	if detail == "full" {
		body := s.Body
		desc.FrontMatter, desc.SkillMD, desc.Files, desc.Digest = s.Front, &body, s.Files(), s.Digest()
	}
	return &DescribeSkillResult{Skill: desc}, nil
}

// DescribeSkillResult is describe_skill's result.
type DescribeSkillResult struct {
	Skill SkillDescription `json:"skill"`
}

// SkillFile is the result of read_skill_file.
type SkillFile struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	Path       string `json:"path"`
	SizeBytes  int64  `json:"size_bytes"`
	SHA256     string `json:"sha256"`
	Offset     int64  `json:"offset"`
	Encoding   string `json:"encoding"`
	Content    string `json:"content"`
	Truncated  bool   `json:"truncated"`
	NextOffset *int64 `json:"next_offset,omitempty"`
}

func (d *Dispatcher) readSkillFile(_ context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	name, version, path := p.RequiredString("name"), p.String("version"), p.RequiredString("path")
	offset := p.Int("offset", 0, 0, 1<<40)
	maxBytes := p.Int("max_bytes", 0, 1, 1<<40)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if err := checkSkill(call, name); err != nil {
		return nil, err
	}
	s, err := d.catalog().Resolve(name, version)
	if err != nil {
		return nil, err
	}
	data, info, err := s.ReadFile(path)
	switch {
	case errors.Is(err, skills.ErrPathRefused):
		return nil, paramErr("path", "must be a relative path inside the skill's folder (no '..', no absolute paths, no links out)")
	case errors.Is(err, skills.ErrFileNotFound):
		return nil, paramErr("path", "names no file of "+s.Manifest.Name+" "+s.Manifest.Version+
			" (describe_skill with detail \"full\" lists the files)")
	case err != nil:
		return nil, err
	}
	if offset > int64(len(data)) {
		return nil, paramErr("offset", "is past the end of the file ("+strconv.Itoa(len(data))+" bytes)")
	}
	rest := data[offset:]
	budget := d.contentBudget()
	if maxBytes > 0 && int(maxBytes) < len(rest) {
		rest = rest[:maxBytes]
	}
	pl, n := encodePayload(rest, isText(data), budget)
	res := &SkillFile{
		Name: s.Manifest.Name, Version: s.Manifest.Version, Path: info.Path, SizeBytes: info.Size,
		SHA256: info.SHA256, Offset: offset, Encoding: pl.Encoding, Content: pl.Content,
		Truncated: offset+int64(n) < int64(len(data)),
	}
	if res.Truncated {
		next := offset + int64(n)
		res.NextOffset = &next
	}
	return res, nil
}

func (d *Dispatcher) loadGuide(_ context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	if err := p.Err(); err != nil {
		return nil, err
	}
	return map[string]string{"content": skills.Guide()}, nil
}

func (d *Dispatcher) catalog() *skills.Catalog { return d.opts.Skills.Catalog() }

// contentBudget is how many bytes of encoded content one response may carry.
func (d *Dispatcher) contentBudget() int {
	return max(d.opts.Info.MaxMessageSize-responseOverhead, 1024)
}
