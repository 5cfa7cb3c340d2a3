// Package crdfile is hubspoke's one reader of CustomResourceDefinition
// files: a file is read as kubectl reads it (internal/yamljson: YAML 1.1,
// or JSON, several documents), and each CRD is decoded as the API server
// decodes it with strict field validation (sigs.k8s.io/json: keys matched
// exactly, unknown and duplicate fields refused), every problem named at
// its file:line:col.
//
// It links the CRD's types and no part of the API server, so that package
// sandbox, which programs link to run one, stays light. Package schema
// builds on it with the structural schemas.
package crdfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kjson "sigs.k8s.io/json"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/internal/yamljson"
)

// CRD is one CustomResourceDefinition of a file.
type CRD struct {
	// File is the name the CRD was read from (used in error positions).
	File string
	// Object is the decoded CustomResourceDefinition.
	Object *apiextv1.CustomResourceDefinition

	lines map[string]int // JSON pointer -> 1-based line in File
}

// ReadFile reads the first CustomResourceDefinition of the file at path.
func ReadFile(path string) (*CRD, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read crd: %w", err)
	}
	crds, err := Read(path, data, true)
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("%s: no CustomResourceDefinition found", path)
	}
	return crds[0], nil
}

// Read decodes the CustomResourceDefinitions of data, in order (only the
// first when first is set); documents of other kinds are passed over.
// name is used in error messages ("name:line:col: ...").
func Read(name string, data []byte, first bool) ([]*CRD, error) {
	docs, err := yamljson.Read(name, data)
	if err != nil {
		return nil, err
	}
	var crds []*CRD
	for i := range docs {
		d := &docs[i]
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(d.JSON, &head); err != nil || head.Kind != "CustomResourceDefinition" {
			continue
		}
		c := &CRD{File: name, lines: d.Lines()}
		if head.APIVersion != "apiextensions.k8s.io/v1" {
			return nil, fmt.Errorf("%s: apiVersion %q: only apiextensions.k8s.io/v1 CustomResourceDefinitions are supported", c.Pos("/apiVersion"), head.APIVersion)
		}
		if err := c.decode(d); err != nil {
			return nil, err
		}
		if crds = append(crds, c); first {
			break
		}
	}
	return crds, nil
}

// decode decodes d, a CustomResourceDefinition, into c.
func (c *CRD) decode(d *yamljson.Document) error {
	obj := &apiextv1.CustomResourceDefinition{}
	strict, err := kjson.UnmarshalStrict(d.JSON, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		// The standard decoder says where: the value that does not fit
		// its field.
		var te *json.UnmarshalTypeError
		if errors.As(json.Unmarshal(d.JSON, &apiextv1.CustomResourceDefinition{}), &te) && te.Offset > 0 {
			ptr := yamljson.PointerAt(d.JSON, int(te.Offset)-1)
			pos := d.OffsetPosition(int(te.Offset) - 1)
			return fmt.Errorf("%s:%d:%d: %s is %s, want %s", c.File, pos.Line, pos.Column, FieldName(ptr), jsonValue(te.Value), goKind(te.Type))
		}
		return fmt.Errorf("%s: %s: not a CustomResourceDefinition: %s", c.File, d.Label(), strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(strict) > 0 {
		var msgs []string
		for _, e := range strict {
			msg := e.Error()
			if q := strings.IndexByte(msg, '"'); q >= 0 {
				if path, err := strconv.Unquote(msg[q:]); err == nil {
					pos, _ := d.Position(pathPointer(path))
					msg = fmt.Sprintf("%s:%d:%d: %s%s", c.File, pos.Line, pos.Column, msg[:q], path)
				}
			}
			msgs = append(msgs, msg)
		}
		return fmt.Errorf("%s", strings.Join(msgs, "\n"))
	}
	c.Object = obj
	return nil
}

// Line returns the 1-based line of the value at the JSON pointer ptr in the
// CRD file, or of its nearest ancestor that has one; 0 when unknown.
func (c *CRD) Line(ptr string) int {
	for {
		if l, ok := c.lines[ptr]; ok {
			return l
		}
		if ptr == "" {
			return 0
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return 0
		}
		ptr = ptr[:i]
	}
}

// Pos returns "file:line" for the JSON pointer ptr (or just the file name
// when the line is unknown).
func (c *CRD) Pos(ptr string) string {
	if l := c.Line(ptr); l > 0 {
		return fmt.Sprintf("%s:%d", c.File, l)
	}
	return c.File
}

// FieldName is a JSON pointer as a field path for messages
// (/spec/versions/0/name: spec.versions[0].name).
func FieldName(ptr string) string {
	if ptr == "" {
		return "the object"
	}
	var b strings.Builder
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// pathPointer turns a field path as sigs.k8s.io/json's strict errors
// write it (spec.versions[0].name) into a JSON pointer.
func pathPointer(path string) string {
	var b strings.Builder
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			name, rest, _ := strings.Cut(part, "[")
			if name != "" {
				b.WriteString("/" + convert.EscapePointerToken(name))
			}
			if rest == "" {
				break
			}
			idx, after, _ := strings.Cut(rest, "]")
			b.WriteString("/" + idx)
			part = after
		}
	}
	return b.String()
}

// jsonValue names a JSON value as encoding/json's UnmarshalTypeError
// describes it ("number -5", "string", "bool").
func jsonValue(v string) string {
	switch {
	case strings.HasPrefix(v, "number"):
		return "a " + v
	case v == "bool":
		return "a boolean"
	case v == "array", v == "object":
		return "an " + v
	}
	return "a " + v
}

// goKind names the JSON a Go type holds.
func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value of another type"
}
