// Package schema loads CustomResourceDefinitions and gives access to the
// structural OpenAPI v3 schema of each of their versions: lookup of a field
// by dotted path or JSON pointer, list semantics (x-kubernetes-list-type and
// x-kubernetes-list-map-keys), defaults, and validation, pruning and
// defaulting of objects exactly as the API server's own code does it.
//
// It is shared by the rule loader, check and migrate. It imports no client-go
// and no net/http.
package schema

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/schema/crdfile"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// Node is one node of a structural schema.
type Node = structuralschema.Structural

// CRD is a loaded CustomResourceDefinition.
type CRD struct {
	// File is the name the CRD was loaded from (used in error positions).
	File string
	// Object is the decoded CustomResourceDefinition.
	Object *apiextv1.CustomResourceDefinition

	versions []*Version
	file     *crdfile.CRD
}

// Version is one entry of spec.versions with its schema.
type Version struct {
	// Name is the version name, e.g. "v1".
	Name string
	// Served and Storage are the version's flags.
	Served, Storage bool
	// Index is the position in spec.versions.
	Index int
	// OpenAPI is the version's openAPIV3Schema as written (nil when absent).
	OpenAPI *apiextv1.JSONSchemaProps
	// Structural is the structural form of OpenAPI; nil when the schema is
	// absent or not structural (see StructuralErr).
	Structural *Node
	// StructuralErr says why Structural is nil.
	StructuralErr error

	internal *apiextensions.JSONSchemaProps

	once      sync.Once
	validator validatorState
}

// ErrNotFound is wrapped by Lookup when a path does not exist in a schema.
var ErrNotFound = errors.New("no such field in schema")

// LoadFile reads the CRD at path (YAML or JSON). When the file holds several
// YAML documents, the first CustomResourceDefinition is used.
func LoadFile(path string) (*CRD, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read crd: %w", err)
	}
	return Load(path, data)
}

// Load decodes a CRD from data; name is used in error messages
// ("name:line: ..."). The file is read as kubectl reads it
// (internal/yamljson: YAML 1.1, or JSON); the CRD is decoded as the API
// server decodes it with strict field validation (sigs.k8s.io/json: keys
// matched exactly, unknown and duplicate fields refused), and every
// problem is named at its line and column.
func Load(name string, data []byte) (*CRD, error) {
	crds, err := load(name, data, true)
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("%s: no CustomResourceDefinition found", name)
	}
	return crds[0], nil
}

// LoadAll is Load for every CustomResourceDefinition of the file, in
// order; none is not an error.
func LoadAll(name string, data []byte) ([]*CRD, error) { return load(name, data, false) }

func load(name string, data []byte, first bool) ([]*CRD, error) {
	files, err := crdfile.Read(name, data, first)
	if err != nil {
		return nil, err
	}
	crds := make([]*CRD, len(files))
	for i, f := range files {
		crds[i] = &CRD{File: f.File, Object: f.Object, file: f}
		if err := crds[i].versionsOf(); err != nil {
			return nil, err
		}
	}
	return crds, nil
}

// versionsOf reads the versions of c.Object and their schemas.
func (c *CRD) versionsOf() error {
	obj := c.Object
	if len(obj.Spec.Versions) == 0 {
		return fmt.Errorf("%s: spec.versions is empty", c.Pos("/spec"))
	}
	seen := map[string]bool{}
	for i := range obj.Spec.Versions {
		sv := &obj.Spec.Versions[i]
		ptr := fmt.Sprintf("/spec/versions/%d", i)
		if sv.Name == "" {
			return fmt.Errorf("%s: spec.versions[%d]: name is empty", c.Pos(ptr), i)
		}
		if seen[sv.Name] {
			return fmt.Errorf("%s: spec.versions[%d]: duplicate version %q", c.Pos(ptr), i, sv.Name)
		}
		seen[sv.Name] = true
		v := &Version{Name: sv.Name, Served: sv.Served, Storage: sv.Storage, Index: i}
		if sv.Schema != nil && sv.Schema.OpenAPIV3Schema != nil {
			v.OpenAPI = sv.Schema.OpenAPIV3Schema
			v.internal = &apiextensions.JSONSchemaProps{}
			if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.OpenAPI, v.internal, nil); err != nil {
				return fmt.Errorf("%s: version %s: convert schema: %w", c.Pos(ptr+"/schema/openAPIV3Schema"), sv.Name, err)
			}
			s, err := structuralschema.NewStructural(v.internal)
			if err == nil {
				if errs := structuralschema.ValidateStructural(nil, s); len(errs) > 0 {
					err = errs.ToAggregate()
				}
			}
			if err != nil {
				v.StructuralErr = fmt.Errorf("schema of version %s is not structural: %w", sv.Name, err)
			} else {
				v.Structural = s
			}
		} else {
			v.StructuralErr = fmt.Errorf("version %s has no schema", sv.Name)
		}
		c.versions = append(c.versions, v)
	}
	return nil
}

// Group returns spec.group.
func (c *CRD) Group() string { return c.Object.Spec.Group }

// Kind returns spec.names.kind.
func (c *CRD) Kind() string { return c.Object.Spec.Names.Kind }

// Versions returns the versions in declaration order.
func (c *CRD) Versions() []*Version { return c.versions }

// Version returns the named version, or nil.
func (c *CRD) Version(name string) *Version {
	for _, v := range c.versions {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// VersionNames returns the version names in declaration order.
func (c *CRD) VersionNames() []string {
	names := make([]string, len(c.versions))
	for i, v := range c.versions {
		names[i] = v.Name
	}
	return names
}

// Line returns the 1-based line of the value at the JSON pointer ptr in the
// CRD file, or of its nearest ancestor that has one; 0 when unknown.
func (c *CRD) Line(ptr string) int { return c.file.Line(ptr) }

// Pos returns "file:line" for the JSON pointer ptr (or just the file name
// when the line is unknown).
func (c *CRD) Pos(ptr string) string { return c.file.Pos(ptr) }

// SchemaPointer returns the JSON pointer, inside the CRD document, of the
// schema of the field at path (segments as convert.Path.SchemaSegments
// returns them) in version v; useful with Pos.
func (c *CRD) SchemaPointer(v *Version, segs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "/spec/versions/%d/schema/openAPIV3Schema", v.Index)
	s := v.Structural
	for _, seg := range segs {
		if s == nil {
			break
		}
		switch {
		case s.Items != nil && isItemSegment(seg):
			b.WriteString("/items")
			s = s.Items
		case s.Properties != nil && hasProp(s, seg):
			b.WriteString("/properties/")
			b.WriteString(convert.EscapePointerToken(seg))
			p := s.Properties[seg]
			s = &p
		case s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil:
			b.WriteString("/additionalProperties")
			s = s.AdditionalProperties.Structural
		default:
			s = nil
		}
	}
	return b.String()
}

func hasProp(s *Node, name string) bool { _, ok := s.Properties[name]; return ok }

func isItemSegment(seg string) bool {
	if seg == "*" || seg == "-" {
		return true
	}
	if seg == "" {
		return false
	}
	for _, r := range seg {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Lookup returns the schema node of the field at path in node root: a
// path as rule files write it (convert.ParsePath: "spec.ports[*].name",
// "spec.labels.*") or a JSON pointer into an object ("/spec/ports/0/name",
// where a number steps into list items). Keys not declared as properties
// step into additionalProperties. The error wraps ErrNotFound and names
// the first missing segment.
func Lookup(root *Node, path string) (*Node, error) {
	parse := convert.ParsePath
	if strings.HasPrefix(path, "/") {
		parse = convert.ParsePointer
	}
	p, err := parse(path)
	if err != nil {
		return nil, err
	}
	return LookupSegments(root, p.Segments())
}

// LookupSegments is Lookup for a path already split into segments.
func LookupSegments(root *Node, segs []string) (*Node, error) {
	s := root
	for i, seg := range segs {
		if s == nil {
			return nil, fmt.Errorf("%s: %w", convert.PathOf(segs[:i+1]...).Pointer(), ErrNotFound)
		}
		if s.Items != nil && isItemSegment(seg) {
			s = s.Items
			continue
		}
		if p, ok := s.Properties[seg]; ok {
			s = &p
			continue
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
			s = s.AdditionalProperties.Structural
			continue
		}
		return nil, fmt.Errorf("%s: %w", convert.PathOf(segs[:i+1]...).Pointer(), ErrNotFound)
	}
	return s, nil
}

// Lookup is Lookup on the version's structural schema.
func (v *Version) Lookup(path string) (*Node, error) {
	if v.Structural == nil {
		return nil, fmt.Errorf("version %s: %w", v.Name, v.StructuralErr)
	}
	n, err := Lookup(v.Structural, path)
	if err != nil {
		return nil, fmt.Errorf("version %s: %w", v.Name, err)
	}
	return n, nil
}

// ListType returns the effective x-kubernetes-list-type of an array node
// ("atomic" when unset) and its map keys.
func ListType(n *Node) (string, []string) {
	if n == nil || n.XListType == nil {
		return "atomic", nil
	}
	return *n.XListType, n.XListMapKeys
}

// Default returns the default of the node (nil, false when none).
func Default(n *Node) (any, bool) {
	if n == nil || n.Default.Object == nil {
		return nil, false
	}
	return n.Default.Object, true
}

// Fields lists every field path of the schema under n (JSON pointers, list
// items as "/*", additionalProperties values as "/{}" ), sorted. Nodes
// themselves are included, the root is not.
func Fields(n *Node) []string {
	var out []string
	var walk func(*Node, string, int)
	walk = func(s *Node, ptr string, depth int) {
		if s == nil || depth > 32 {
			return
		}
		for k, p := range s.Properties {
			pp := ptr + "/" + convert.EscapePointerToken(k)
			out = append(out, pp)
			walk(&p, pp, depth+1)
		}
		if s.Items != nil {
			out = append(out, ptr+"/*")
			walk(s.Items, ptr+"/*", depth+1)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
			out = append(out, ptr+"/{}")
			walk(s.AdditionalProperties.Structural, ptr+"/{}", depth+1)
		}
	}
	walk(n, "", 0)
	sort.Strings(out)
	return out
}
