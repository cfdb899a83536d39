package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrExternalSchemaRef is a $ref outside the schema document: a skill's
// schema may not make the gateway read files or the network.
var ErrExternalSchemaRef = errors.New("a $ref outside the schema document")

// compiledSchema is a schema file of the package, compiled.
type compiledSchema struct {
	doc    json.RawMessage
	schema *jsonschema.Schema
}

// noLoader refuses every reference the document does not resolve itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %s", ErrExternalSchemaRef, url)
}

// compileSchema compiles a JSON Schema document (drafts 4 to 2020-12; the
// default is 2020-12). wantObject requires "type": "object" at the top, as
// MCP requires of a tool's input schema.
func compileSchema(file string, data []byte, wantObject bool) (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if wantObject {
		if m, ok := doc.(map[string]any); !ok || m["type"] != "object" {
			return nil, errors.New(`the top-level schema must say "type": "object" (args are an object)`)
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := "skill:///" + file
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return &compiledSchema{doc: compact.Bytes(), schema: sch}, nil
}

// validate checks a JSON value and lists every violation, deepest first
// within each branch, by instance location, in the shape of the error
// classes' VALIDATION_ERROR: each with the JSON pointer of the offending
// value (Field), what the schema wants there (Expected), the value found
// (Actual; nil when missing) and a message.
func (c *compiledSchema) validate(value json.RawMessage) ([]Violation, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return nil, err
	}
	err = c.schema.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []Violation
	for _, u := range ve.BasicOutput().Errors {
		if u.Error != nil {
			out = append(out, unitViolations(v, u)...)
		}
	}
	if len(out) == 0 {
		out = append(out, Violation{Expected: "a value the args_schema accepts", Actual: actualOf(v), Message: ve.Error()})
	}
	return out, nil
}

// checkSchemaPath wants a clean relative path to a .json file.
func checkSchemaPath(c *collector, tbl map[string]any, key string) string {
	v, ok := tbl[key]
	if !ok {
		return ""
	}
	const expected = "relative path of a .json file inside the package, like schema/args.json"
	p, isString := v.(string)
	if !isString || strings.ContainsAny(p, "\\\x00") || !fs.ValidPath(p) || p == "." || path.Ext(p) != ".json" {
		c.add("/runtime/"+key, expected, v, "not a clean relative path to a .json file")
		return ""
	}
	return p
}

// loadSchemas compiles the manifest's args_schema and output_schema,
// reporting a missing or invalid file as a violation of the manifest.
func loadSchemas(mc *collector, snap *snapshot, rt *Runtime) (args, output *compiledSchema) {
	if rt == nil {
		return nil, nil
	}
	load := func(key, p string, wantObject bool) *compiledSchema {
		if p == "" {
			return nil
		}
		f, ok := searchFiles(snap.files, p)
		if !ok {
			mc.add("/runtime/"+key, "a file of the package", p, "schema file not found in the package")
			return nil
		}
		cs, err := compileSchema(p, f.Data, wantObject)
		if err != nil {
			mc.add("/runtime/"+key, "a valid JSON Schema", p, "%s", err.Error())
			return nil
		}
		return cs
	}
	return load("args_schema", rt.ArgsSchema, true), load("output_schema", rt.OutputSchema, false)
}

// ArgsSchema is the skill's args_schema document, compact; nil without one.
func (s *Skill) ArgsSchema() json.RawMessage {
	if s.args == nil {
		return nil
	}
	return s.args.doc
}

// OutputSchema is the skill's output_schema document; nil without one.
func (s *Skill) OutputSchema() json.RawMessage {
	if s.output == nil {
		return nil
	}
	return s.output.doc
}

// ValidateArgs checks a run's args (a JSON object) against args_schema
// and returns every violation (Field is a JSON pointer into args, "" for
// args itself; File is empty); none when the skill has no schema.
func (s *Skill) ValidateArgs(args json.RawMessage) ([]Violation, error) {
	if s.args == nil {
		return nil, nil
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return s.args.validate(args)
}
