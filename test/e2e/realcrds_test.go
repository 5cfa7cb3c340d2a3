package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	_ "github.com/hubspoke/hubspoke/convert/celenv" // cel rules, as the hubspoke binaries run them
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// TestRealCRDFixtures installs each real-CRD example (its CRD as published,
// its rule file served by the real hubspoke handler) and, for every fixture
// that converts, writes the input with kubectl through its own version and
// reads it back with kubectl through the fixture's target version and
// through its own: the API server stores it in the hub version, so both
// reads go through the webhook. spec, status and the preserved annotation
// must be the fixture's (a field the API server defaults from the schema
// may be added).
func TestRealCRDFixtures(t *testing.T) {
	t.Parallel() // the real projects' groups, used by no other test
	for _, ex := range []string{"kubebuilder-cronjob", "cert-manager-certificate", "cluster-api-ipaddressclaim", "knative-pingsource", "cluster-api-machinehealthcheck", "kueue-cohort"} {
		t.Run(ex, func(t *testing.T) {
			t.Parallel() // each example its own group and webhook; each fixture its own object
			dir := filepath.Join("../../examples", ex)
			crd := installExample(t, dir, "hs-"+ex)
			plural, group := crd.Spec.Names.Plural, crd.Spec.Group
			inputs, err := filepath.Glob(filepath.Join(dir, "fixtures", "*", "input.yaml"))
			if err != nil || len(inputs) == 0 {
				t.Fatalf("no fixtures: %v", err)
			}
			for _, in := range inputs {
				fx := filepath.Dir(in)
				if _, err := os.Stat(filepath.Join(fx, "error.txt")); err == nil {
					continue // a conversion error: the API server's answer is the webhook's error
				}
				name := filepath.Base(fx)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					obj := readYAML(t, in)
					want := readYAML(t, filepath.Join(fx, "expected.yaml"))
					target := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(fx, "target")))))
					own := strings.TrimPrefix(obj["apiVersion"].(string), group+"/")
					md := obj["metadata"].(map[string]any)
					md["name"], md["namespace"] = name, ns
					status, hasStatus := obj["status"]
					delete(obj, "status")
					file := filepath.Join(t.TempDir(), "obj.json")
					if err := os.WriteFile(file, must(json.Marshal(obj)), 0o600); err != nil {
						t.Fatal(err)
					}
					kubectl(t, "create", "-f", file)
					if hasStatus {
						patch := must(json.Marshal(map[string]any{"status": status}))
						kubectl(t, "patch", plural+"."+own+"."+group, name, "-n", ns, "--subresource=status", "--type=merge", "-p", string(patch))
					}
					obj["status"] = status
					if !hasStatus {
						delete(obj, "status")
					}
					// Both reads in one kubectl get, which lists the
					// objects as it reads them: the target version's, then
					// the fixture's own.
					reads := []struct {
						version string
						want    map[string]any
					}{{target, want}, {own, obj}}
					args := []string{"get", "-n", ns, "-o", "json"}
					for _, read := range reads {
						args = append(args, plural+"."+read.version+"."+group+"/"+name)
					}
					var got struct {
						Items []map[string]any `json:"items"`
					}
					out := kubectl(t, args...)
					if err := json.Unmarshal(out, &got); err != nil || len(got.Items) != len(reads) {
						t.Fatalf("kubectl get of both versions: %v, %d objects, want %d\n%s", err, len(got.Items), len(reads), out)
					}
					for i, read := range reads {
						if av := got.Items[i]["apiVersion"]; av != group+"/"+read.version {
							t.Fatalf("kubectl get: object %d is %v, want %s/%s", i, av, group, read.version)
						}
						compareRead(t, crd, read.version, read.want, got.Items[i])
					}
				})
			}
		})
	}
}

// installExample serves the example's rules as service name and installs
// its CRD pointing at it.
func installExample(t *testing.T, dir, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conv, err := rules.LoadFile(filepath.Join(dir, "conversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sb.ServeWebhook(hsNamespace, name, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	crd, err := sandbox.ReadCRDFile(filepath.Join(dir, "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = hsNamespace
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = name
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := waitCABundles(ctx, crd.Name); err != nil {
		t.Fatal(err)
	}
	return crd
}

// compareRead compares what the API server returned through version with
// want: spec and status, where the API server may add the defaults of the
// version's schema, and the preserved annotation.
func compareRead(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version string, want, got map[string]any) {
	t.Helper()
	var props map[string]apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			props = v.Schema.OpenAPIV3Schema.Properties
		}
	}
	for _, part := range []string{"spec", "status"} {
		w, _ := normalizeAny(want[part]).(map[string]any)
		g, _ := normalizeAny(got[part]).(map[string]any)
		for k := range g {
			if _, ok := w[k]; !ok && props[part].Properties[k].Default != nil {
				delete(g, k) // defaulted by the API server on read
			}
		}
		if len(w) == 0 && len(g) == 0 {
			continue
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s through %s (-want +got):\n%s", part, version, diff)
		}
	}
	if diff := cmp.Diff(preserved(t, want), preserved(t, got)); diff != "" {
		t.Errorf("preserved annotation through %s (-want +got):\n%s", version, diff)
	}
}

func preserved(t *testing.T, obj map[string]any) any {
	t.Helper()
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	s, ok := ann["hubspoke.dev/preserved"].(string)
	if !ok {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("preserved annotation %q: %v", s, err)
	}
	return v
}

func normalizeAny(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
