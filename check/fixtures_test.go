package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert/rules"
)

func TestLoadFixtures(t *testing.T) {
	fx, err := LoadFixtures("testdata/fixtures")
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Name, Target, Error string
		HasError, HasWant   bool
	}
	var got []summary
	for _, f := range fx {
		got = append(got, summary{f.Name, f.Target, f.Error, f.HasError, f.Expected != nil})
	}
	want := []summary{
		{Name: "bad-target", Target: "v1", HasWant: true},
		{Name: "dup", Target: "example.com/v1", Error: `duplicate name "a"`, HasError: true},
		{Name: "flat", Target: "example.com/v1alpha1", HasWant: true},
		{Name: "rename-dir", Target: "v1", HasWant: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fixtures (-want +got):\n%s", diff)
	}
}

func TestRunFixtures(t *testing.T) {
	crd := loadCRD(t, "testdata/crd.yaml")
	r, err := Fixtures(context.Background(), "testdata/fixtures", &fakeConverter{}, crd)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fixtures != 4 {
		t.Errorf("ran %d fixtures, want 4", r.Fixtures)
	}
	// Only bad-target fails: its expected size is wrong.
	if len(r.Findings) != 1 {
		t.Fatalf("findings:\n%s", textOf(r))
	}
	f := r.Findings[0]
	if f.Check != CheckFixture || f.Path != "/spec/size" || !strings.Contains(f.Message, "fixture bad-target") {
		t.Errorf("finding = %+v", f)
	}
	// Without the CRD the set is compared in order, and rename-dir fails.
	r, err = Fixtures(context.Background(), "testdata/fixtures", &fakeConverter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 2 {
		t.Errorf("without a CRD want 2 findings, got:\n%s", textOf(r))
	}
}

func TestFixturesErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{name: "no input", files: map[string]string{"a.target": "v1", "a.error.txt": "x"}, want: "fixture a: no input.yaml"},
		{name: "no expectation", files: map[string]string{"a.input.yaml": "{apiVersion: x/v1, kind: K}", "a.target": "v1"}, want: "needs expected.yaml or error.txt"},
		{name: "both expectations", files: map[string]string{"a.input.yaml": "{}", "a.expected.yaml": "{}", "a.error.txt": "x"}, want: "keep one"},
		{name: "error case without target", files: map[string]string{"a.input.yaml": "{apiVersion: x/v1}", "a.error.txt": "x"}, want: "needs a target file"},
		{name: "empty target", files: map[string]string{"a.input.yaml": "{apiVersion: x/v1}", "a.error.txt": "x", "a.target": "# nothing\n"}, want: "is empty"},
		{name: "input not an object", files: map[string]string{"a.input.yaml": "[1]", "a.error.txt": "x", "a.target": "v1"}, want: "not an object"},
		{name: "both layouts", files: map[string]string{"a.input.yaml": "{}", "a/input.yaml": "{}"}, want: "give its input"},
		{name: "empty directory", files: map[string]string{"README.md": "hi"}, want: "no fixture cases found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Fixtures(context.Background(), dir, &fakeConverter{}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestFixtureExpectations(t *testing.T) {
	in := []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Gadget","metadata":{"name":"g"},"spec":{"replicas":1}}`)
	tests := []struct {
		name string
		fx   Fixture
		want string // substring of the single finding; "" for none
	}{
		{name: "expected error happens", fx: Fixture{Name: "e", Input: []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Gadget","metadata":{"name":"g"},"spec":{"endpoints":[{"name":"a"},{"name":"a"}]}}`), Target: "v1", Error: "duplicate", HasError: true}},
		{name: "any error accepted", fx: Fixture{Name: "e", Input: []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Gadget","metadata":{"name":"g"},"spec":{"endpoints":[{"name":"a"},{"name":"a"}]}}`), Target: "v1", HasError: true}},
		{name: "expected error missing", fx: Fixture{Name: "e", Input: in, Target: "v1", Error: "boom", HasError: true}, want: "conversion succeeded"},
		{name: "wrong error", fx: Fixture{Name: "e", Input: in, Target: "v9", Error: "boom", HasError: true}, want: "does not contain"},
		{name: "unexpected error", fx: Fixture{Name: "e", Input: in, Target: "v9", Expected: in}, want: "conversion failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := RunFixtures(context.Background(), []Fixture{tt.fx}, &fakeConverter{}, nil)
			switch {
			case tt.want == "" && len(r.Findings) != 0:
				t.Errorf("unexpected findings:\n%s", textOf(r))
			case tt.want != "" && (len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Message, tt.want)):
				t.Errorf("want one finding containing %q, got:\n%s", tt.want, textOf(r))
			}
		})
	}
}

// TestEvolvingWidgetFixtures runs the example's golden cases on the real
// engine.
func TestEvolvingWidgetFixtures(t *testing.T) {
	const dir = "../examples/evolving-widget/"
	crd := loadCRD(t, dir+"crd.yaml")
	conv, err := rules.LoadFile(dir + "conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Fixtures(context.Background(), dir+"fixtures", conv, crd)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fixtures == 0 || len(r.Findings) > 0 {
		t.Fatalf("%d fixtures:\n%s", r.Fixtures, textOf(r))
	}
}
