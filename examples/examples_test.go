// Package examples_test checks every example: its CRD decodes strictly as an
// apiextensions.k8s.io/v1 CustomResourceDefinition that matches its rule
// file, and every fixture converts as recorded.
package examples_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hubspoke/hubspoke/internal/yamljson"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

func examples(t *testing.T) []string {
	dirs, err := filepath.Glob("*/conversion.yaml")
	if err != nil || len(dirs) < 2 {
		t.Fatalf("examples: %v %v", dirs, err)
	}
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	return dirs
}

func TestCRDMatchesRules(t *testing.T) {
	for _, dir := range examples(t) {
		t.Run(dir, func(t *testing.T) {
			loaded, err := schema.LoadFile(filepath.Join(dir, "crd.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			crd := loaded.Object
			c, err := rules.LoadFile(filepath.Join(dir, "conversion.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if crd.Spec.Group != c.Group() || crd.Spec.Names.Kind != c.Kind() {
				t.Errorf("crd is %s/%s, rules %s/%s", crd.Spec.Group, crd.Spec.Names.Kind, c.Group(), c.Kind())
			}
			var versions []string
			storage := ""
			for _, v := range crd.Spec.Versions {
				versions = append(versions, v.Name)
				if v.Storage {
					if storage != "" {
						t.Errorf("two storage versions: %s and %s", storage, v.Name)
					}
					storage = v.Name
				}
			}
			if storage != c.Hub() {
				t.Errorf("storage version %s is not the hub %s", storage, c.Hub())
			}
			if diff := cmp.Diff(sorted(c.Versions()), sorted(versions)); diff != "" {
				t.Errorf("versions (-rules +crd):\n%s", diff)
			}
			if cv := crd.Spec.Conversion; cv == nil || cv.Strategy != apiextensionsv1.WebhookConverter || cv.Webhook == nil {
				t.Errorf("conversion strategy is not Webhook")
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestFixtures(t *testing.T) {
	n := 0
	for _, dir := range examples(t) {
		c, err := rules.LoadFile(filepath.Join(dir, "conversion.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		cases, _ := filepath.Glob(filepath.Join(dir, "fixtures", "*", "input.yaml"))
		for _, in := range cases {
			caseDir := filepath.Dir(in)
			n++
			t.Run(caseDir, func(t *testing.T) {
				input := readJSON(t, in)
				target := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(caseDir, "target")))))
				if !strings.Contains(target, "/") {
					target = c.Group() + "/" + target
				}
				out, err := c.Convert(nil, input, target)
				if wantErr, rerr := os.ReadFile(filepath.Join(caseDir, "error.txt")); rerr == nil {
					if err == nil {
						t.Fatalf("converted, want error %q; output %s", wantErr, out)
					}
					if !strings.Contains(err.Error(), strings.TrimSpace(string(wantErr))) {
						t.Fatalf("error %q does not contain %q", err, strings.TrimSpace(string(wantErr)))
					}
					var ce *convert.Error
					if !asError(err, &ce) || ce.Pointer == "" {
						t.Errorf("error carries no JSON pointer: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := readJSON(t, filepath.Join(caseDir, "expected.yaml"))
				if diff := cmp.Diff(decode(t, want), decode(t, out)); diff != "" {
					t.Errorf("output differs (-want +got):\n%s", diff)
				}
			})
		}
	}
	if n < 10 {
		t.Errorf("only %d fixtures found", n)
	}
}

func asError(err error, target **convert.Error) bool {
	e, ok := err.(*convert.Error)
	if ok {
		*target = e
	}
	return ok
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func readJSON(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yamljson.ToJSON(data) // as hubspoke convert and check --fixtures read it
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return j
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestEveryPairHasAFixture: in every example, a fixture for every ordered
// pair of versions.
func TestEveryPairHasAFixture(t *testing.T) {
	for _, dir := range examples(t) {
		c, err := rules.LoadFile(filepath.Join(dir, "conversion.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range c.Versions() {
			for _, b := range c.Versions() {
				if a == b {
					continue
				}
				if _, err := os.Stat(filepath.Join(dir, "fixtures", a+"-to-"+b, "expected.yaml")); err != nil {
					t.Errorf("%s: no fixture for %s -> %s", dir, a, b)
				}
			}
		}
	}
}

// TestRealCRDExamplesListed: every example of a real project's CRD (its
// README counts the differences its rules express) is listed where the
// README and docs/rules.md list them.
func TestRealCRDExamplesListed(t *testing.T) {
	readmes, err := filepath.Glob("*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var real []string
	for _, r := range readmes {
		data, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "**Expressed: ") {
			real = append(real, filepath.Dir(r))
		}
	}
	if len(real) < 6 {
		t.Fatalf("real-CRD examples %v: want at least six", real)
	}
	for doc, link := range map[string]string{"../README.md": "(examples/%s)", "../docs/rules.md": "(../examples/%s)"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range real {
			if l := fmt.Sprintf(link, ex); !strings.Contains(string(data), l) {
				t.Errorf("%s does not list examples/%s (no link %s)", doc, ex, l)
			}
		}
	}
}
