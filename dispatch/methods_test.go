package dispatch

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/blob"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/transport"
)

// paramCase is one call that must fail with an invalid-params class error.
type paramCase struct {
	method, params string
	stringCode     string // expected data.string_code
	param          string // expected data.param, when a parameter is at fault
}

func checkError(t *testing.T, c caller, tc paramCase) {
	t.Helper()
	_, err := c.call(tc.method, tc.params)
	require.NotNil(t, err, "%s %s %s must fail", c.name(), tc.method, tc.params)
	if c.name() == "framed" && err.Code == transport.CodeParseError && tc.stringCode == transport.StringInvalidParams {
		// A number outside the parameter's range aborts a framed
		// connection as a parse error; the _CloseReason names it.
		assert.Regexp(t, `parameter "`+regexp.QuoteMeta(tc.param)+`" must be (between|an integer)`, err.Details, "%s %s", tc.method, tc.params)
		return
	}
	assert.Equal(t, tc.stringCode, err.EffectiveCode(), "%s %s %s: %s", c.name(), tc.method, tc.params, err.Details)
	if tc.param != "" {
		assert.Equal(t, `"`+tc.param+`"`, string(err.Extra["param"]), "%s %s: %s", tc.method, tc.params, err.Details)
		assert.Contains(t, err.Details, tc.param)
	}
}

func examplesDir() string { return "../examples/skills" }

func TestParameterErrors(t *testing.T) {
	e := newEnv(t, examplesDir())
	const ip = transport.StringInvalidParams
	cases := []paramCase{
		{"list_skills", `{"detail":"everything"}`, ip, "detail"},
		{"list_skills", `{"limit":0}`, ip, "limit"},
		{"list_skills", `{"limit":"10"}`, ip, "limit"},
		{"list_skills", `{"namespace":7}`, ip, "namespace"},
		{"list_skills", `{"cursor":"garbage"}`, ip, "cursor"},
		{"list_skills", `{"namspace":"acme"}`, ip, "namspace"},
		{"describe_skill", `{}`, ip, "name"},
		{"describe_skill", `{"name":""}`, ip, "name"},
		{"describe_skill", `{"name":["acme.math.add"]}`, ip, "name"},
		{"describe_skill", `{"name":"acme.math.add","detail":"all"}`, ip, "detail"},
		{"describe_skill", `{"name":"acme.nope"}`, StringSkillNotFound, ""},
		{"describe_skill", `{"name":"acme.math.add","version":"9.9.9"}`, StringSkillNotFound, ""},
		{"read_skill_file", `{"name":"acme.math.add"}`, ip, "path"},
		{"read_skill_file", `{"name":"acme.math.add","path":"../acme.style.guide/SKILL.md"}`, ip, "path"},
		{"read_skill_file", `{"name":"acme.math.add","path":"/etc/passwd"}`, ip, "path"},
		{"read_skill_file", `{"name":"acme.math.add","path":"code/../../x"}`, ip, "path"},
		{"read_skill_file", `{"name":"acme.math.add","path":"nope.txt"}`, ip, "path"},
		{"read_skill_file", `{"name":"acme.math.add","path":"SKILL.md","offset":-1}`, ip, "offset"},
		{"read_skill_file", `{"name":"acme.math.add","path":"SKILL.md","offset":1000000}`, ip, "offset"},
		{"read_skill_file", `{"name":"nope.x","path":"SKILL.md"}`, StringSkillNotFound, ""},
		{"create_blob", `{}`, ip, "content"},
		{"create_blob", `{"content":5}`, ip, "content"},
		{"create_blob", `{"content":"x","kind":"not a mime"}`, ip, "kind"},
		{"create_blob", `{"content":"@@@","kind":"application/pdf"}`, ip, "content"},
		{"create_blob", `{"content":"x","encoding":"latin-1"}`, ip, "encoding"},
		{"read_blob", `{}`, ip, "blob_id"},
		{"read_blob", `{"blob_id":"../../etc/passwd"}`, ip, "blob_id"},
		{"read_blob", `{"blob_id":"blob:0123456789abcdef0123456789abcdef"}`, StringBlobNotFound, ""},
		{"read_blob", `{"blob_id":"blob:0123456789abcdef0123456789abcdef","mode":"middle"}`, ip, "mode"},
		{"read_blob", `{"blob_id":"blob:0123456789abcdef0123456789abcdef","max_bytes":0}`, ip, "max_bytes"},
		{"load_skills_protocol_guide", `{"verbose":true}`, ip, "verbose"},
		{"no_such_method", `{}`, transport.StringMethodNotFound, ""},
	}
	for _, c := range e.fronts() {
		for _, tc := range cases {
			checkError(t, c, tc)
		}
	}
}

// A number that is not an exact integer must not be coerced: over HTTP it
// is an invalid parameter; on the framed transport it is a parse error
// that aborts the connection, as the transport specification requires.
func TestNonIntegerNumbers(t *testing.T) {
	e := newEnv(t, examplesDir())
	h := e.httpFront("")
	checkError(t, h, paramCase{"list_skills", `{"limit":2.5}`, transport.StringInvalidParams, "limit"})
	res, err := h.call("list_skills", `{"limit":2.00}`)
	require.Nil(t, err, "every spelling of an integer is accepted")
	var page ListSkillsResult
	require.NoError(t, json.Unmarshal(res, &page))
	assert.Len(t, page.Skills, 2)

	f := framedCaller{t, e.framed()}
	_, err = f.call("list_skills", `{"limit":2e0}`)
	require.Nil(t, err)
	_, callErr := f.c.Call(t.Context(), "list_skills", json.RawMessage(`{"limit":2.5}`))
	require.Error(t, callErr)
	<-f.c.Done()
	assert.Equal(t, "peer_closed", f.c.Reason().String(), "the gateway closed the connection")
}

func TestListSkillsPagination(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 230 {
		ns := []string{"acme", "beta", "acmecorp"}[i%3]
		name := fmt.Sprintf("%s.pkg%03d.run", ns, i)
		writeSkill(t, dir, name, "1.0.0", nil)
		if i%7 == 0 {
			writeSkill(t, dir, name, "1.1.0", nil)
		}
		want = append(want, name)
	}
	e := newEnv(t, dir)
	for _, c := range e.fronts() {
		for _, tc := range []struct {
			namespace string
			limit     int
		}{{"", 1}, {"", 7}, {"", 50}, {"acme", 13}, {"acmecorp", 1000}} {
			var got []string
			cursor := ""
			for range 1000 {
				params := map[string]any{"limit": tc.limit}
				if tc.namespace != "" {
					params["namespace"] = tc.namespace
				}
				if cursor != "" {
					params["cursor"] = cursor
				}
				raw, _ := json.Marshal(params)
				res, err := c.call("list_skills", string(raw))
				require.Nil(t, err)
				var page ListSkillsResult
				require.NoError(t, json.Unmarshal(res, &page))
				require.LessOrEqual(t, len(page.Skills), tc.limit)
				for _, s := range page.Skills {
					got = append(got, s.Name)
				}
				if page.NextCursor == nil {
					break
				}
				cursor = *page.NextCursor
			}
			var expect []string
			for _, n := range append(want, "skills.protocol.guide") {
				if tc.namespace == "" || strings.HasPrefix(n, tc.namespace+".") {
					expect = append(expect, n)
				}
			}
			assert.ElementsMatch(t, expect, got, "%s namespace %q limit %d", c.name(), tc.namespace, tc.limit)
			assert.IsIncreasing(t, got, "deterministic order by name")
		}
	}
}

func TestListSkillsDetail(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, c := range e.fronts() {
		res, err := c.call("ListSkills", `{"namespace":"acme","detail":"summary","limit":1}`)
		require.Nil(t, err)
		assert.JSONEq(t, `{"skills":[{"name":"acme.math.add","version":"1.1.0","description":"Add two numbers, or every number of a list.",
			"namespace":"acme","kind":"action"}],"next_cursor":`+cursorOf(t, res)+`}`, string(res))
		res, err = c.call("list_skills", `{"namespace":"acme","limit":1}`)
		require.Nil(t, err)
		assert.JSONEq(t, `{"skills":[{"name":"acme.math.add","version":"1.1.0","description":"Add two numbers, or every number of a list."}],`+
			`"next_cursor":`+cursorOf(t, res)+`}`, string(res))
		res, err = c.call("list_skills", `{"namespace":"acme","limit":1,"detail":"names"}`)
		require.Nil(t, err)
		assert.JSONEq(t, `{"skills":[{"name":"acme.math.add","version":"1.1.0"}],"next_cursor":`+cursorOf(t, res)+`}`, string(res))
	}
}

func cursorOf(t *testing.T, res json.RawMessage) string {
	var page struct {
		NextCursor json.RawMessage `json:"next_cursor"`
	}
	require.NoError(t, json.Unmarshal(res, &page))
	return string(page.NextCursor)
}

func TestDescribeSkill(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, c := range e.fronts() {
		res, err := c.call("describe_skill", `{"name":"acme.math.add","version":"1.0.0","detail":"manifest"}`)
		require.Nil(t, err)
		var got struct{ Skill map[string]any }
		require.NoError(t, json.Unmarshal(res, &got))
		assert.Equal(t, "1.0.0", got.Skill["version"])
		assert.NotContains(t, got.Skill, "files")
		assert.Equal(t, "python", got.Skill["manifest"].(map[string]any)["runtime"].(map[string]any)["language"])

		res, err = c.call("DescribeSkill", `{"name":"acme.math.add"}`)
		require.Nil(t, err)
		require.NoError(t, json.Unmarshal(res, &got))
		assert.Equal(t, "1.1.0", got.Skill["version"], "latest by default")
		assert.Equal(t, []any{"1.1.0", "1.0.0"}, got.Skill["versions"])
		assert.NotContains(t, got.Skill, "skill_md")

		res, err = c.call("describe_skill", `{"name":"acme.math.add","detail":"full"}`)
		require.Nil(t, err)
		var full struct{ Skill SkillDescription }
		require.NoError(t, json.Unmarshal(res, &full))
		require.NotNil(t, full.Skill.SkillMD)
		assert.NotEmpty(t, *full.Skill.SkillMD)
		assert.NotContains(t, *full.Skill.SkillMD, "short_description:", "the body comes without front matter")
		paths := map[string]bool{}
		for _, f := range full.Skill.Files {
			paths[f.Path] = true
			assert.Len(t, f.SHA256, 64)
		}
		assert.True(t, paths["skill.toml"] && paths["SKILL.md"] && paths["code/main.py"])
	}
}

func TestReadSkillFile(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("line with \"quotes\" and ä\n", 4000) // ~100 KB, over one message
	bin := make([]byte, 3000)
	for i := range bin {
		bin[i] = byte(i)
	}
	writeSkill(t, dir, "acme.files.demo", "1.0.0", map[string]string{"resources/big.txt": big, "resources/blob.bin": string(bin)})
	e := newEnv(t, dir)
	for _, c := range e.fronts() {
		res, err := c.call("read_skill_file", `{"name":"acme.files.demo","path":"code/main.py"}`)
		require.Nil(t, err)
		var f SkillFile
		require.NoError(t, json.Unmarshal(res, &f))
		assert.Equal(t, "utf-8", f.Encoding)
		assert.Equal(t, "def main(args):\n    return {\"ok\": True}\n", f.Content)
		assert.False(t, f.Truncated)

		res, err = c.call("read_skill_file", `{"name":"acme.files.demo","path":"resources/blob.bin"}`)
		require.Nil(t, err)
		require.NoError(t, json.Unmarshal(res, &f))
		assert.Equal(t, "base64", f.Encoding)
		dec, _ := base64.StdEncoding.DecodeString(f.Content)
		assert.Equal(t, bin, dec)

		// A file larger than a message is read in pieces that join up.
		var joined strings.Builder
		params := `{"name":"acme.files.demo","path":"resources/big.txt"}`
		for range 20 {
			res, err = c.call("read_skill_file", params)
			require.Nil(t, err)
			f = SkillFile{}
			require.NoError(t, json.Unmarshal(res, &f))
			assert.LessOrEqual(t, len(res), testMaxMessage)
			joined.WriteString(f.Content)
			if !f.Truncated {
				break
			}
			params = fmt.Sprintf(`{"name":"acme.files.demo","path":"resources/big.txt","offset":%d}`, *f.NextOffset)
		}
		assert.Equal(t, big, joined.String())
	}
}

func TestBlobs(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, c := range e.fronts() {
		res, err := c.call("create_blob", `{"content":"alpha\nbeta\ngamma ä\n","kind":"text/csv"}`)
		require.Nil(t, err)
		var created CreateBlobResult
		require.NoError(t, json.Unmarshal(res, &created))
		assert.True(t, strings.HasPrefix(created.BlobID, "blob:"))
		assert.EqualValues(t, 20, created.SizeBytes)

		read := func(params string) ReadBlobResult {
			res, err := c.call("read_blob", params)
			require.Nil(t, err, "read_blob %s", params)
			var r ReadBlobResult
			require.NoError(t, json.Unmarshal(res, &r))
			return r
		}
		id := created.BlobID
		r := read(`{"blob_id":"` + id + `"}`)
		assert.Equal(t, "alpha\nbeta\ngamma ä\n", r.Content)
		assert.False(t, r.Truncated)
		assert.Equal(t, "text/csv", r.Kind)
		r = read(`{"blob_id":"` + id + `","mode":"sample_head","max_bytes":5}`)
		assert.Equal(t, "alpha", r.Content)
		assert.True(t, r.Truncated)
		r = read(`{"blob_id":"` + id + `","mode":"sample_tail","max_bytes":4}`)
		assert.Equal(t, " ä\n", r.Content, "a sample never splits a character")
		r = read(`{"blob_id":"` + id + `","mode":"full"}`)
		assert.Equal(t, "alpha\nbeta\ngamma ä\n", r.Content)

		pdf := base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\x00\x01\x02"))
		res, err = c.call("CreateBlob", `{"content":"`+pdf+`","kind":"application/pdf"}`)
		require.Nil(t, err)
		require.NoError(t, json.Unmarshal(res, &created))
		assert.EqualValues(t, 11, created.SizeBytes)
		r = read(`{"blob_id":"` + created.BlobID + `","mode":"full"}`)
		assert.Equal(t, "base64", r.Encoding)
		assert.Equal(t, pdf, r.Content)

		large := strings.Repeat("x", 200<<10)
		id = e.putBlob(t, large)
		_, err = c.call("read_blob", `{"blob_id":"`+id+`","mode":"full"}`)
		require.NotNil(t, err)
		assert.Contains(t, err.Details, "sample_head")
		r = read(`{"blob_id":"` + id + `","mode":"sample_tail","max_bytes":1000000}`)
		assert.True(t, r.Truncated)
		assert.Less(t, len(r.Content), testMaxMessage)
	}
}

// putBlob stores a blob of the anonymous identity, the caller of an open
// gateway.
func (e *env) putBlob(t *testing.T, content string) string {
	info, err := e.blobs.Put(t.Context(), e.blobs.NewID(), blob.PutOptions{Kind: "text/plain", Owner: auth.AnonymousName},
		strings.NewReader(content))
	require.NoError(t, err)
	return info.ID
}

func TestBlobTooLarge(t *testing.T) {
	e := newEnvWith(t, examplesDir(), 1024)
	for _, c := range e.fronts() {
		_, err := c.call("create_blob", `{"content":"`+strings.Repeat("a", 1025)+`"}`)
		require.NotNil(t, err)
		assert.Equal(t, StringBlobTooLarge, err.EffectiveCode())
		_, err = c.call("create_blob", `{"content":"`+strings.Repeat("a", 1024)+`"}`)
		assert.Nil(t, err)
	}
}

func TestLoadGuide(t *testing.T) {
	e := newEnv(t, "")
	for _, c := range e.fronts() {
		res, err := c.call("load_skills_protocol_guide", `{}`)
		require.Nil(t, err)
		var g struct{ Content string }
		require.NoError(t, json.Unmarshal(res, &g))
		for _, want := range []string{"list_skills", "describe_skill", "read_skill_file", "execute_skill", "run_code",
			"create_blob", "read_blob", "from skills.", "status"} {
			assert.Contains(t, g.Content, want)
		}
		_, err = c.call("LoadSkillsProtocolGuide", `{"_meta":{"progressToken":1}}`)
		assert.Nil(t, err, "_meta is allowed")
	}
}

func TestInitialize(t *testing.T) {
	e := newEnv(t, "")
	c := e.framed()
	_, err := c.Call(t.Context(), "Initialize", map[string]any{"protocol_version": "1.0"})
	var te *transport.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, transport.StringAlreadyInitialized, te.EffectiveCode())

	h := e.httpFront("")
	_, werr := h.call("Initialize", `{"protocol_version":"1.0"}`)
	require.NotNil(t, werr, "HTTP needs no Initialize and does not offer it")
	assert.Equal(t, transport.StringMethodNotFound, werr.EffectiveCode())

	d := e.d
	for params, code := range map[string]string{
		`{}`:                         transport.StringInvalidParams,
		`{"protocol_version":1}`:     transport.StringInvalidParams,
		`{"protocol_version":"2.0"}`: StringVersionIncompatible,
		`{"protocol_version":"1.0","client":"me"}`:       transport.StringInvalidParams,
		`{"protocol_version":"1.0","client":{"name":1}}`: transport.StringInvalidParams,
	} {
		_, err := d.initialize(t.Context(), &Call{Params: json.RawMessage(params), log: &d.opts.Logger, caller: &requestCaller{}})
		assert.Equal(t, code, ToWire(err).EffectiveCode(), params)
	}
	e2 := newEnv(t, "")
	res, err := e2.framedRaw().Call(t.Context(), "Initialize", json.RawMessage(`{"protocol_version":"1.3","client":{"name":"pos","version":"1"}}`))
	require.NoError(t, err)
	var ir InitializeResult
	require.NoError(t, json.Unmarshal(res, &ir))
	assert.Equal(t, "1.0", ir.ProtocolVersion)
	assert.Equal(t, "anonymous", ir.Identity)
	assert.Equal(t, testMaxMessage, ir.MaxMessageSize)
	assert.True(t, strings.HasPrefix(ir.SessionID, "s-"))
	assert.Contains(t, ir.Methods, "list_skills")
	assert.NotContains(t, ir.Methods, "Initialize")
}
