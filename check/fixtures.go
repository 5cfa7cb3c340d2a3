package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
	"github.com/hubspoke/hubspoke/internal/yamljson"
	"github.com/hubspoke/hubspoke/schema"
)

// Fixture is one golden conversion case (see docs/check.md for the layout
// on disk).
type Fixture struct {
	// Name of the case: the directory name, or the file name prefix.
	Name string
	// Input is the JSON of the object to convert; InputFile where it came
	// from.
	Input     []byte
	InputFile string
	// Target is the target as written: a version ("v1") or an apiVersion
	// ("example.com/v1").
	Target string
	// Expected is the JSON of the expected output (nil for an error case).
	Expected     []byte
	ExpectedFile string
	// Error is the expected error substring; HasError is set for an error
	// case (an empty Error accepts any error).
	Error    string
	HasError bool
}

// fixture file roles, by base name without the case prefix.
var fixtureRoles = map[string]string{
	"input.yaml": "input", "input.yml": "input", "input.json": "input",
	"expected.yaml": "expected", "expected.yml": "expected", "expected.json": "expected",
	"target": "target", "target.txt": "target",
	"error.txt": "error",
}

// LoadFixtures reads every case in dir: subdirectories holding input.yaml,
// target, expected.yaml or error.txt, and flat files named
// <name>.input.yaml, <name>.target, <name>.expected.yaml, <name>.error.txt.
// Cases are returned in name order.
func LoadFixtures(dir string) ([]Fixture, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read fixtures: %w", err)
	}
	files := map[string]map[string]string{} // case -> role -> path
	put := func(name, role, path string) error {
		if files[name] == nil {
			files[name] = map[string]string{}
		}
		if prev, ok := files[name][role]; ok {
			return fmt.Errorf("fixture %s: both %s and %s give its %s", name, prev, path, role)
		}
		files[name][role] = path
		return nil
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			continue
		}
		if e.IsDir() {
			sub, err := os.ReadDir(filepath.Join(dir, n))
			if err != nil {
				return nil, fmt.Errorf("read fixture %s: %w", n, err)
			}
			for _, f := range sub {
				if role, ok := fixtureRoles[f.Name()]; ok && !f.IsDir() {
					if err := put(n, role, filepath.Join(dir, n, f.Name())); err != nil {
						return nil, err
					}
				}
			}
			continue
		}
		name, rest, ok := strings.Cut(n, ".")
		if !ok {
			continue
		}
		if role, ok := fixtureRoles[rest]; ok {
			if err := put(name, role, filepath.Join(dir, n)); err != nil {
				return nil, err
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Fixture
	for _, n := range names {
		f, err := loadFixture(n, files[n])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func loadFixture(name string, roles map[string]string) (Fixture, error) {
	f := Fixture{Name: name}
	in, ok := roles["input"]
	if !ok {
		return f, fmt.Errorf("fixture %s: no input.yaml", name)
	}
	var err error
	if f.Input, err = readYAMLObject(in); err != nil {
		return f, fmt.Errorf("fixture %s: %w", name, err)
	}
	f.InputFile = in
	exp, hasExp := roles["expected"]
	errFile, hasErr := roles["error"]
	switch {
	case hasExp && hasErr:
		return f, fmt.Errorf("fixture %s: has both %s and %s; keep one", name, exp, errFile)
	case !hasExp && !hasErr:
		return f, fmt.Errorf("fixture %s: needs expected.yaml or error.txt", name)
	case hasExp:
		if f.Expected, err = readYAMLObject(exp); err != nil {
			return f, fmt.Errorf("fixture %s: %w", name, err)
		}
		f.ExpectedFile = exp
	default:
		b, err := os.ReadFile(errFile)
		if err != nil {
			return f, fmt.Errorf("fixture %s: %w", name, err)
		}
		f.Error, f.HasError = strings.TrimSpace(string(b)), true
	}
	if t, ok := roles["target"]; ok {
		b, err := os.ReadFile(t)
		if err != nil {
			return f, fmt.Errorf("fixture %s: %w", name, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			f.Target = line
			break
		}
		if f.Target == "" {
			return f, fmt.Errorf("fixture %s: %s is empty", name, t)
		}
	} else if f.Expected != nil {
		v, _ := decodeJSON(f.Expected)
		if m, ok := v.(map[string]any); ok {
			f.Target, _ = m["apiVersion"].(string)
		}
		if f.Target == "" {
			return f, fmt.Errorf("fixture %s: no target file and no apiVersion in %s", name, exp)
		}
	} else {
		return f, fmt.Errorf("fixture %s: an error case needs a target file", name)
	}
	return f, nil
}

// readYAMLObject reads the one object of a fixture file, YAML or JSON, as
// hubspoke convert reads it (internal/yamljson: number literals and key
// order as written), so that a golden file made by convert compares
// equal.
func readYAMLObject(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := yamljson.Read(path, b)
	if err != nil {
		return nil, err
	}
	switch {
	case len(docs) == 0:
		return nil, fmt.Errorf("%s: no object in the file", path)
	case len(docs) > 1:
		return nil, fmt.Errorf("%s: %s: a fixture file holds one object; this is the second", path, docs[1].Label())
	}
	d := &docs[0]
	if i := jsonscan.SkipSpace(d.JSON, 0); i >= len(d.JSON) || d.JSON[i] != '{' {
		return nil, fmt.Errorf("%s:%d: %s is %s, not an object", path, d.Line, d.Label(), jsonscan.Kind(d.JSON[i]))
	}
	return d.JSON, nil
}

// RunFixtures converts each fixture's input with conv and compares the
// result with its expectation. crd may be nil; with it, list order follows
// the target schema (sets and maps are unordered) and successful outputs
// must validate against the target version's schema.
func RunFixtures(ctx context.Context, fixtures []Fixture, conv Converter, crd *schema.CRD) *Report {
	r := &Report{}
	vals := &validators{}
	for _, f := range fixtures {
		if ctx.Err() != nil {
			break
		}
		r.Fixtures++
		target := f.Target
		if !strings.Contains(target, "/") {
			target = conv.Group() + "/" + target
		}
		version := target[strings.LastIndexByte(target, '/')+1:]
		in, _ := decodeJSON(f.Input)
		from := ""
		if m, ok := in.(map[string]any); ok {
			if av, ok := m["apiVersion"].(string); ok {
				from = av[strings.LastIndexByte(av, '/')+1:]
			}
		}
		base := Finding{Check: CheckFixture, From: from, To: version, Pos: f.InputFile}
		fail := func(msg string, mod func(*Finding)) {
			x := base
			x.Message = fmt.Sprintf("fixture %s: %s", f.Name, msg)
			if mod != nil {
				mod(&x)
			}
			r.Add(x)
		}
		out, err := conv.Convert(nil, f.Input, target)
		if f.HasError {
			switch {
			case err == nil:
				dec, _ := decodeJSON(out)
				fail(fmt.Sprintf("expected an error containing %q, conversion succeeded", f.Error), func(x *Finding) { x.Output = dec })
			case !strings.Contains(err.Error(), f.Error):
				fail(fmt.Sprintf("error %q does not contain %q", err.Error(), f.Error), nil)
			}
			continue
		}
		if err != nil {
			fail(fmt.Sprintf("conversion failed: %v", err), nil)
			continue
		}
		got, err := decodeJSON(out)
		if err != nil {
			fail(fmt.Sprintf("output is not JSON: %v", err), nil)
			continue
		}
		want, _ := decodeJSON(f.Expected)
		var node *schema.Node
		var ver *schema.Version
		if crd != nil {
			if ver = crd.Version(version); ver != nil {
				node = ver.Structural
			}
		}
		if ver != nil {
			// Compare what the API server would hold: the output after
			// its post-conversion treatment, as the laws do in both modes.
			g, err1 := coerced(ver, f.Input, out)
			w, err2 := coerced(ver, f.Input, f.Expected)
			if err1 == nil && err2 == nil {
				got, want = g, w
			}
		}
		if ptr, d := Diff(want, got, node); d {
			fail(fmt.Sprintf("output differs from %s at %s", filepath.Base(f.ExpectedFile), ptrDesc(ptr)), func(x *Finding) {
				x.Path = ptr
				x.Output, x.Expected = got, want
			})
			continue
		}
		if ver != nil {
			if m, ok := unstructured(got).(map[string]any); ok {
				if probs := vals.validate(ver, m); len(probs) > 0 {
					msgs := make([]string, len(probs))
					for i, p := range probs {
						msgs[i] = p.String()
					}
					fail(fmt.Sprintf("output does not validate against the %s schema: %s", version, strings.Join(msgs, "; ")), func(x *Finding) {
						x.Path = schema.FieldPointer(probs[0].Path)
					})
				}
			}
		}
	}
	return r
}

// coerced decodes a converted object and applies what the API server does
// to it after a conversion from in (restoreMetadata, then Coerce).
func coerced(v *schema.Version, in, out []byte) (map[string]any, error) {
	i, err := decodeObject(in)
	if err != nil {
		return nil, err
	}
	o, err := decodeObject(out)
	if err != nil {
		return nil, err
	}
	restoreMetadata(i, o)
	if err := Coerce(v, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Fixtures loads the fixtures in dir and runs them (see RunFixtures).
func Fixtures(ctx context.Context, dir string, conv Converter, crd *schema.CRD) (*Report, error) {
	fx, err := LoadFixtures(dir)
	if err != nil {
		return nil, err
	}
	if len(fx) == 0 {
		return nil, fmt.Errorf("fixtures %s: %w", dir, errNoFixtures)
	}
	return RunFixtures(ctx, fx, conv, crd), nil
}

var errNoFixtures = errors.New("no fixture cases found")
