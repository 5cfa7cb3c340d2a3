package check

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/schema"
)

// TestGeneratorDeepSchema holds the generator's target on a real, deep
// schema: at least 90% of the objects generated for a CRD embedding the
// full PodTemplateSpec (testdata/podset, built from the Kubernetes API's
// own OpenAPI) are valid as the API server judges them: OpenAPI schema,
// list types and map keys, metadata, unknown fields and the CRD's CEL
// rules.
func TestGeneratorDeepSchema(t *testing.T) {
	crd := loadCRD(t, "testdata/podset/crd.yaml")
	v := crd.Version("v1")
	if v.Structural == nil {
		t.Fatalf("podset schema is not structural: %v", v.StructuralErr)
	}
	start := time.Now()
	objs, g, err := ValidObjects(crd, v, 300, 11)
	if err != nil {
		t.Fatal(err)
	}
	frac := float64(g.Valid) / float64(g.Generated)
	t.Logf("%d of %d generated PodSets valid (%.1f%%) in %v", g.Valid, g.Generated, 100*frac, time.Since(start))
	if frac < 0.9 {
		t.Errorf("only %.1f%% of generated objects valid, want at least 90%%; problems: %s", 100*frac, g.Problems)
	}
	if len(objs) != g.Valid {
		t.Errorf("%d objects returned for %d valid", len(objs), g.Valid)
	}
}

// TestStrategyNone: strategy None is correct when every version has the
// same schema (no finding), and otherwise says which fields break.
func TestStrategyNone(t *testing.T) {
	crd := loadCRD(t, "testdata/podset/crd.yaml")
	if r := Static(crd, nil); len(r.Findings) > 0 {
		t.Errorf("identical schemas with strategy None:\n%s", textOf(r))
	}
	differ, err := schema.Load("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {replicas: {type: integer}}}}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := Static(differ, nil)
	want := []string{"error conversion-strategy ->"}
	if diff := cmp.Diff(want, findingKeysNoPath(r)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s\n%s", diff, textOf(r))
	}
	for _, s := range []string{"/spec/size only in v1", "/spec/replicas only in v2", "strategy Webhook"} {
		if !strings.Contains(r.Findings[0].Message, s) {
			t.Errorf("message lacks %q: %s", s, r.Findings[0].Message)
		}
	}
	if strings.Contains(r.Findings[0].Message, "hubspoke") {
		t.Errorf("message names hubspoke: %s", r.Findings[0].Message)
	}
}

func findingKeysNoPath(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Severity)+" "+f.Check+" "+f.From+"->"+f.To)
	}
	return out
}
