package review

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hubspoke/hubspoke/internal/yamljson"

	"github.com/hubspoke/hubspoke/convert"
	_ "github.com/hubspoke/hubspoke/convert/celenv" // the examples use cel rules, as the hubspoke binaries serve them
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/examples/gofuncs/flags"
)

// exampleHandler serves every example's rule file from one handler, as
// `hubspoke serve --rules a --rules b` does.
func exampleHandler(t *testing.T) *Handler {
	t.Helper()
	files, err := filepath.Glob("../examples/*/conversion.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("example rule files: %v %v", files, err)
	}
	// The gofuncs example's Go rule, as its program registers it.
	argsToOptions, err := flags.Rule()
	if err != nil {
		t.Fatal(err)
	}
	opts := rules.Options{Funcs: map[string]convert.Rule{flags.Name: argsToOptions}}
	var convs []Converter
	for _, f := range files {
		c, err := rules.LoadFile(f, opts)
		if err != nil {
			t.Fatal(err)
		}
		convs = append(convs, c)
	}
	h, _ := newTestHandler(t, Options{Converters: convs})
	return h
}

func yamlToJSON(t *testing.T, path string) string {
	t.Helper()
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yamljson.ToJSON(y) // as hubspoke convert and check --fixtures read it
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(j)
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// TestExampleFixtures runs every example fixture through the handler, alone
// and in one batch per target version, in both review versions.
func TestExampleFixtures(t *testing.T) {
	h := exampleHandler(t)
	dirs, err := filepath.Glob("../examples/*/fixtures/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("fixtures: %v %v", dirs, err)
	}
	type batch struct{ inputs, want []string }
	batches := map[string]*batch{} // by desired apiVersion
	for _, dir := range dirs {
		input := yamlToJSON(t, filepath.Join(dir, "input.yaml"))
		group := strings.SplitN(jsonValue(t, []byte(input)).(map[string]any)["apiVersion"].(string), "/", 2)[0]
		desired := group + "/" + readTrimmed(t, filepath.Join(dir, "target"))
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(dir)))+"/"+filepath.Base(dir), func(t *testing.T) {
			for _, apiVersion := range []string{APIVersionV1, APIVersionV1beta1} {
				status, b := post(t, h, reviewBody(apiVersion, "uid-fixture", desired, input))
				if status != 200 {
					t.Fatalf("status %d: %s", status, b)
				}
				rr := decodeResponse(t, b)
				if rr.APIVersion != apiVersion || rr.Response.UID != "uid-fixture" {
					t.Errorf("answered %s uid %q", rr.APIVersion, rr.Response.UID)
				}
				if wantErr, err := os.ReadFile(filepath.Join(dir, "error.txt")); err == nil {
					msg := rr.Response.Result.Message
					if rr.Response.Result.Status != "Failure" || !strings.HasPrefix(msg, "object [0] ") || !strings.Contains(msg, strings.TrimSpace(string(wantErr))) {
						t.Errorf("got %s %q, want Failure naming object [0] and %q", rr.Response.Result.Status, msg, wantErr)
					}
					continue
				}
				if rr.Response.Result.Status != "Success" || len(rr.Response.ConvertedObjects) != 1 {
					t.Fatalf("got %s %q", rr.Response.Result.Status, rr.Response.Result.Message)
				}
				want := yamlToJSON(t, filepath.Join(dir, "expected.yaml"))
				if diff := cmp.Diff(jsonValue(t, []byte(want)), jsonValue(t, rr.Response.ConvertedObjects[0])); diff != "" {
					t.Errorf("converted (-want +got):\n%s", diff)
				}
			}
		})
		if _, err := os.Stat(filepath.Join(dir, "expected.yaml")); err == nil {
			b := batches[desired]
			if b == nil {
				b = &batch{}
				batches[desired] = b
			}
			b.inputs = append(b.inputs, input)
			b.want = append(b.want, yamlToJSON(t, filepath.Join(dir, "expected.yaml")))
		}
	}
	for desired, b := range batches {
		t.Run("batch to "+desired, func(t *testing.T) {
			status, body := post(t, h, reviewBody(APIVersionV1, "uid-batch", desired, b.inputs...))
			rr := decodeResponse(t, body)
			if status != 200 || rr.Response.Result.Status != "Success" {
				t.Fatalf("got %d %s %q", status, rr.Response.Result.Status, rr.Response.Result.Message)
			}
			var got, want []any
			for i := range b.want {
				want = append(want, jsonValue(t, []byte(b.want[i])))
			}
			for _, o := range rr.Response.ConvertedObjects {
				got = append(got, jsonValue(t, o))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("batch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSampleReview checks examples/widget/review-v1.json, the body of the
// curl example in docs/serve.md.
func TestSampleReview(t *testing.T) {
	h := exampleHandler(t)
	body, err := os.ReadFile("../examples/widget/review-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	status, b := post(t, h, string(body))
	rr := decodeResponse(t, b)
	if status != 200 || rr.Response.Result.Status != "Success" || len(rr.Response.ConvertedObjects) != 1 {
		t.Fatalf("got %d %s", status, b)
	}
	got := jsonValue(t, rr.Response.ConvertedObjects[0]).(map[string]any)
	if got["apiVersion"] != "example.com/v1" || got["spec"].(map[string]any)["size"] != 3.0 {
		t.Errorf("converted: %v", got)
	}
}
