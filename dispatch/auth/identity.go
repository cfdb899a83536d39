package auth

import (
	"strings"
	"sync/atomic"
)

// Class is an identity's kind of client. The set is fixed so that it can
// label metrics; it grants nothing by itself.
type Class string

// Identity classes.
const (
	ClassAgent     Class = "agent"     // agent runtimes
	ClassDevice    Class = "device"    // payment-terminal-style devices
	ClassDashboard Class = "dashboard" // ops dashboards and read-only tools
	ClassService   Class = "service"   // other back-end services
	ClassAdmin     Class = "admin"     // operators
	ClassAnonymous Class = "anonymous" // the identity of an open gateway; not allowed in the file
)

// Classes lists every class, ClassAnonymous included, for pre-registering
// metric label values.
func Classes() []Class {
	return []Class{ClassAgent, ClassDevice, ClassDashboard, ClassService, ClassAdmin, ClassAnonymous}
}

func fileClass(s string) bool {
	switch Class(s) {
	case ClassAgent, ClassDevice, ClassDashboard, ClassService, ClassAdmin:
		return true
	}
	return false
}

// AnonymousName is the name of the anonymous identity. It is reserved: the
// auth file cannot use it.
const AnonymousName = "anonymous"

// Wildcard, alone in methods or namespaces, allows all.
const Wildcard = "*"

// DefaultMethods returns the canonical method names an auth file may list
// when ParseOptions.Methods is empty, for tools that check a file without
// a gateway. The gateway itself passes the names of its method table
// (dispatch.GrantableMethods), and a test of package dispatch keeps this
// list equal to them. Initialize is not among them: it is where
// authentication happens, so it is never subject to a method policy.
func DefaultMethods() []string {
	return []string{
		"list_skills", "describe_skill", "read_skill_file", "execute_skill",
		"run_code", "create_blob", "read_blob", "load_skills_protocol_guide",
		"begin_upload", "upload_chunk", "finish_upload",
		"get_run", "watch_run", "cancel_run", "list_runs", "gateway_status",
	}
}

// Limits are an identity's fair-use limits; zero means unlimited.
type Limits struct {
	RequestsPerSecond float64 // token-bucket refill rate
	Burst             int     // bucket size; at least 1 when RequestsPerSecond > 0
	ConcurrentRuns    int     // execute_skill/run_code in flight
	MaxConnections    int     // framed connections at once
	BlobStoreBytes    int64   // bytes of all the identity's blobs together
}

// grant is what the auth file says about one identity. It is shared by the
// per-credential Identity values of a snapshot and never changes once
// built, except for the limiter cache.
type grant struct {
	name          string
	class         Class
	allMethods    bool
	methods       map[string]struct{}
	allNamespaces bool
	namespaces    map[string]struct{}
	limits        Limits
	network       []string // nil: skills' network is not narrowed
	runCode       []string // what run_code may reach
	entry         digest   // the fingerprint of the identity's entry in the file

	lim atomic.Pointer[limiterCache] // the Limiter entry last used for this grant
}

// credKind says how an Identity value was obtained.
type credKind uint8

const (
	credNone  credKind = iota // looked up by name
	credToken                 // by token; cred.digest is set
	credCert                  // by certificate; cred.cert is set
	credAnon                  // the anonymous identity
)

type credential struct {
	kind   credKind
	digest digest
	cert   certKey
}

// Identity is an authenticated client: its name, class, what it may call
// and see, and its limits. It is immutable and safe for concurrent use. An
// Identity belongs to the version of the auth file it came from; use
// Store.Revalidate to carry it over to the current version. A nil
// *Identity allows nothing.
type Identity struct {
	g    *grant
	cred credential
	snap *Policy // nil for the anonymous identity
}

// Anonymous returns the identity of a gateway running without an auth
// file: every method, every namespace, the given limits (zero: none).
func Anonymous(limits Limits) *Identity {
	g := &grant{name: AnonymousName, class: ClassAnonymous, allMethods: true, allNamespaces: true, limits: limits}
	return &Identity{g: g, cred: credential{kind: credAnon}}
}

// Name returns the identity's unique name.
func (id *Identity) Name() string {
	if id == nil {
		return ""
	}
	return id.g.name
}

// Class returns the identity's class.
func (id *Identity) Class() Class {
	if id == nil {
		return ""
	}
	return id.g.class
}

// Limits returns the identity's limits.
func (id *Identity) Limits() Limits {
	if id == nil {
		return Limits{}
	}
	return id.g.limits
}

// Network returns the patterns that narrow the network of the skills the
// identity runs; narrowed is false when its entry does not say.
func (id *Identity) Network() (patterns []string, narrowed bool) {
	if id == nil {
		return nil, true
	}
	return id.g.network, id.g.network != nil
}

// RunCodeNetwork returns what the identity's run_code may reach; empty
// means no network.
func (id *Identity) RunCodeNetwork() []string {
	if id == nil {
		return nil
	}
	return id.g.runCode
}

// IsAnonymous reports whether this is the identity of an open gateway.
func (id *Identity) IsAnonymous() bool { return id != nil && id.cred.kind == credAnon }

// AllowsMethod reports whether the identity may call the method, given by
// its canonical name (aliases are mapped by the caller).
func (id *Identity) AllowsMethod(canonical string) bool {
	if id == nil {
		return false
	}
	if id.g.allMethods {
		return true
	}
	_, ok := id.g.methods[canonical]
	return ok
}

// SeesNamespace reports whether skills of the namespace are visible to the
// identity (listed, described, read and run).
func (id *Identity) SeesNamespace(ns string) bool {
	if id == nil {
		return false
	}
	if id.g.allNamespaces {
		return true
	}
	_, ok := id.g.namespaces[ns]
	return ok
}

// SeesSkill reports whether the skill of that dotted name is visible: its
// namespace is the first segment of the name ("acme" in "acme.math.add").
func (id *Identity) SeesSkill(name string) bool {
	return id.SeesNamespace(SkillNamespace(name))
}

// SkillNamespace returns the namespace of a dotted skill name: its first
// segment, or the whole name when it has no dot.
func SkillNamespace(name string) string {
	ns, _, _ := strings.Cut(name, ".")
	return ns
}

// CheckMethod returns nil if the identity may call the method, or a
// *Failure wrapping ErrPermissionDenied.
func (id *Identity) CheckMethod(canonical string) error {
	if id.AllowsMethod(canonical) {
		return nil
	}
	return &Failure{reason: ReasonMethodDenied, err: ErrPermissionDenied,
		detail: "this identity may not call " + quote(canonical)}
}

// CheckSkill returns nil if the skill is visible to the identity, or a
// *Failure wrapping ErrPermissionDenied. Calling it before looking the
// skill up keeps the answer the same whether the skill exists or not.
func (id *Identity) CheckSkill(name string) error {
	if id.SeesSkill(name) {
		return nil
	}
	return &Failure{reason: ReasonNamespaceDenied, err: ErrPermissionDenied,
		detail: "this identity may not use skills of namespace " + quote(SkillNamespace(name))}
}

// Methods returns the allowed canonical method names, sorted, or
// [Wildcard].
func (id *Identity) Methods() []string {
	if id == nil {
		return nil
	}
	return setList(id.g.allMethods, id.g.methods)
}

// Namespaces returns the visible namespaces, sorted, or [Wildcard].
func (id *Identity) Namespaces() []string {
	if id == nil {
		return nil
	}
	return setList(id.g.allNamespaces, id.g.namespaces)
}

// String returns "name (class)", for logs.
func (id *Identity) String() string {
	if id == nil {
		return "<none>"
	}
	return id.g.name + " (" + string(id.g.class) + ")"
}
