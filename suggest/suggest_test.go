package suggest_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	_ "github.com/hubspoke/hubspoke/convert/celenv" // cel rules load as the hubspoke binaries load them
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/suggest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// crdOf is a CRD with a spoke v1alpha1 and a hub v1 (storage) whose spec
// properties are the given YAML flow mappings (other top-level properties
// may follow spec's, after a newline at the same indentation).
func crdOf(t *testing.T, spoke, hub string) *schema.CRD {
	t.Helper()
	version := func(name string, storage bool, props string) string {
		return fmt.Sprintf(`  - name: %s
    served: true
    storage: %v
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: %s
`, name, storage, props)
	}
	doc := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  names: {kind: Gizmo, listKind: GizmoList, plural: gizmos, singular: gizmo}
  scope: Namespaced
  versions:
` + version("v1alpha1", false, spoke) + version("v1", true, hub)
	crd, err := schema.Load("crd.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return crd
}

// summary renders a spoke's rules one a line: kind from -> to {params},
// and its notes.
func summary(s suggest.Spoke) []string {
	var out []string
	for _, n := range s.Notes {
		out = append(out, "note: "+n)
	}
	for _, r := range s.Rules {
		line := r.Kind + " " + r.From
		if r.To != r.From && r.To != "" {
			line += " -> " + r.To
		}
		var ps []string
		for _, p := range r.Params {
			if raw, ok := p.Value.(json.RawMessage); ok {
				ps = append(ps, fmt.Sprintf("%s=%s", p.Key, raw))
				continue
			}
			ps = append(ps, fmt.Sprintf("%s=%v", p.Key, p.Value))
		}
		if len(ps) > 0 {
			line += " {" + strings.Join(ps, " ") + "}"
		}
		if r.TODO != "" {
			line += " TODO"
		}
		out = append(out, line)
	}
	return out
}

// TestSuggestFindsEachKind: one difference at a time, the rule it calls
// for, and each rule file loads.
func TestSuggestFindsEachKind(t *testing.T) {
	tests := []struct {
		name        string
		spoke, hub  string
		want        []string
		wantTODONot bool
	}{
		{name: "same schemas", spoke: "{a: {type: string}}", hub: "{a: {type: string}}",
			want: []string{"note: the v1alpha1 and v1 schemas hold the same fields: no rule needed"}},
		{name: "rename by a like name", spoke: "{emailSANs: {type: array, items: {type: string}}}", hub: "{emailAddresses: {type: array, items: {type: string}}}",
			want: []string{"rename spec.emailSANs -> spec.emailAddresses"}},
		{name: "rename by an abbreviation", spoke: "{authzURL: {type: string}}", hub: "{authorizationURL: {type: string}}",
			want: []string{"rename spec.authzURL -> spec.authorizationURL"}},
		{name: "rename by an abbreviation alone", spoke: "{authz: {type: string}}", hub: "{authorization: {type: string}}",
			want: []string{"rename spec.authz -> spec.authorization"}},
		{name: "rename by description", spoke: "{count: {type: integer, description: 'How many pods the controller runs for this gizmo'}}", hub: "{size: {type: integer, description: 'How many pods the controller runs for the gizmo'}}",
			want: []string{"rename spec.count -> spec.size"}},
		{name: "move into a new object, the rest kept first", spoke: "{keySize: {type: integer}}", hub: "{privateKey: {type: object, properties: {size: {type: integer}, rotationPolicy: {type: string}}}}",
			want: []string{"hubOnly spec.privateKey", "rename spec.keySize -> spec.privateKey.size"}},
		{name: "move out of an old object, the rest kept last", spoke: "{placement: {type: object, properties: {region: {type: string, maxLength: 63}, rack: {type: string}}}}", hub: "{region: {type: string, maxLength: 63}}",
			want: []string{"rename spec.placement.region -> spec.region", "spokeOnly spec.placement"}},
		{name: "enum by spelling", spoke: "{enc: {type: string, enum: [pkcs1, pkcs8]}}", hub: "{enc: {type: string, enum: [PKCS1, PKCS8]}}",
			want: []string{"enum spec.enc {values=[{pkcs1 PKCS1} {pkcs8 PKCS8}]}"}},
		{name: "enum by order, to confirm", spoke: "{mode: {type: string, enum: [Fast, Slow]}}", hub: "{mode: {type: string, enum: [Performance, Economy]}}",
			want: []string{"enum spec.mode {values=[{Fast Performance} {Slow Economy}]} TODO"}},
		{name: "hub-only enum values kept", spoke: "{alg: {type: string, enum: [RSA, ECDSA]}}", hub: "{alg: {type: string, enum: [RSA, ECDSA, Ed25519]}}",
			want: []string{`cel spec.alg {toHub=self fromHub=self in ["RSA", "ECDSA"] ? optional.of(self) : optional.none() otherwise=keep} TODO`}},
		{name: "hub-only enum values, renamed values", spoke: "{alg: {type: string, enum: [rsa, ecdsa]}}", hub: "{alg: {type: string, enum: [RSA, ECDSA, Ed25519]}}",
			want: []string{`cel spec.alg {toHub={"rsa": "RSA", "ecdsa": "ECDSA"}[self] fromHub={"RSA": "rsa", "ECDSA": "ecdsa"}[?self] otherwise=keep} TODO`}},
		{name: "spoke value without a partner", spoke: "{m: {type: string, enum: [a, b, c]}}", hub: "{m: {type: string, enum: [A, B]}}",
			want: []string{"enum spec.m {values=[{a A} {b B}]} TODO"}},
		{name: "duration from the unit in the name", spoke: "{timeoutSeconds: {type: integer}}", hub: "{timeout: {type: string}}",
			want: []string{"duration spec.timeoutSeconds -> spec.timeout {unit=s round=reject} TODO"}},
		{name: "duration string in the spoke", spoke: "{retryInterval: {type: string}}", hub: "{retryIntervalMinutes: {type: integer}}",
			want: []string{"duration spec.retryInterval -> spec.retryIntervalMinutes {unit=m round=reject spoke=string} TODO"}},
		{name: "int to string", spoke: "{buildNumber: {type: integer}}", hub: "{build: {type: string}}",
			want: []string{"intToString spec.buildNumber -> spec.build"}},
		{name: "string to int", spoke: "{port: {type: string}}", hub: "{port: {type: integer}}",
			want: []string{"stringToInt spec.port TODO"}},
		{name: "scale by unit names", spoke: "{memoryMiB: {type: integer}}", hub: "{memoryBytes: {type: integer}}",
			want: []string{"scale spec.memoryMiB -> spec.memoryBytes {multiply=1048576}"}},
		{name: "scale by a metric prefix", spoke: "{capacityTons: {type: integer}}", hub: "{capacityKilotons: {type: integer}}",
			want: []string{"scale spec.capacityTons -> spec.capacityKilotons {divide=1000}"}},
		{name: "list to map by its list-map key", spoke: "{ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}}}",
			hub:  "{ports: {type: object, additionalProperties: {type: object, properties: {port: {type: integer}}}}}",
			want: []string{"listToMap spec.ports {key=name order=keep}"}},
		{name: "list to map, duplicates possible", spoke: "{ports: {type: array, items: {type: object, properties: {name: {type: string}, port: {type: integer}}}}}",
			hub:  "{ports: {type: object, additionalProperties: {type: object, properties: {port: {type: integer}}}}}",
			want: []string{"listToMap spec.ports {key=name order=keep} TODO"}},
		{name: "map to list", spoke: "{ports: {type: object, additionalProperties: {type: object, properties: {port: {type: integer}}}}}",
			hub:  "{ports: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}}}",
			want: []string{"mapToList spec.ports {key=name}"}},
		{name: "singleton list to item", spoke: "{homes: {type: array, items: {type: object, properties: {harbor: {type: string}}}}}", hub: "{home: {type: object, properties: {harbor: {type: string}}}}",
			want: []string{"listToItem spec.homes -> spec.home {otherwise=keep}"}},
		{name: "item to singleton list", spoke: "{escort: {type: string}}", hub: "{escorts: {type: array, items: {type: string}}}",
			want: []string{"itemToList spec.escort -> spec.escorts {otherwise=keep}"}},
		{name: "cron string to its fields", spoke: "{schedule: {type: string}}", hub: "{schedule: {type: object, required: [minute, hour], properties: {minute: {type: string}, hour: {type: string}, dayOfMonth: {type: string}, month: {type: string}, dayOfWeek: {type: string}}}}",
			want: []string{"split spec.schedule {pattern={minute} {hour} {dayOfMonth} {month} {dayOfWeek} defaults=[{dayOfMonth *} {month *} {dayOfWeek *}] otherwise=keep} TODO"}},
		{name: "fields in one version only", spoke: "{debug: {type: boolean}}", hub: "{priority: {type: string, default: Normal}}",
			want: []string{"hubOnly spec.priority {default=\"Normal\"}", "spokeOnly spec.debug"}},
		{name: "same shape, nothing alike: both kept, a TODO", spoke: "{debug: {type: boolean}}", hub: "{paused: {type: boolean}}",
			want: []string{"hubOnly spec.paused TODO", "spokeOnly spec.debug TODO"}},
		{name: "the one pair left of one shape: a guess", spoke: "{replicas: {type: integer, minimum: 0}}", hub: "{size: {type: integer, minimum: 0}}",
			want: []string{"rename spec.replicas -> spec.size TODO"}},
		{name: "inside list items, by key", spoke: "{ships: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name], properties: {name: {type: string}, imageRef: {type: string}}}}}",
			hub:  "{ships: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name], properties: {name: {type: string}, image: {type: string}}}}}",
			want: []string{"rename spec.ships[name=*].imageRef -> spec.ships[name=*].image"}},
		{name: "inside map values", spoke: "{berths: {type: object, additionalProperties: {type: object, properties: {depthMeters: {type: integer}}}}}",
			hub:  "{berths: {type: object, additionalProperties: {type: object, properties: {depthMillimeters: {type: integer}}}}}",
			want: []string{"scale spec.berths.*.depthMeters -> spec.berths.*.depthMillimeters {multiply=1000}"}},
		{name: "newly required", spoke: "{ref: {type: object, properties: {group: {type: string}, name: {type: string}}}}", hub: "{ref: {type: object, required: [group], properties: {group: {type: string}, name: {type: string}}}}",
			want: []string{"note: TODO: spec.ref.group is required in v1, optional in v1alpha1: a v1alpha1 object without it converts to a v1 object the API server refuses; give v1's schema a default, or write a value for it with a cel rule"}},
		{name: "no rule converts it", spoke: "{tags: {type: object, additionalProperties: {type: string}}}", hub: "{tags: {type: string}}",
			want: []string{"note: TODO: spec.tags is a map in v1alpha1 and spec.tags is a string in v1: no rule kind converts these; write a cel rule (toHub and fromHub)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := crdOf(t, tt.spoke, tt.hub)
			res, err := suggest.Suggest(crd, suggest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summary(res.Spokes[0])); diff != "" {
				t.Errorf("suggested (-want +got):\n%s", diff)
			}
			out := res.YAML(suggest.Header{Source: "crd.yaml"})
			if _, err := rules.Parse("suggested.yaml", out); err != nil {
				t.Errorf("the suggestion does not load: %v\n%s", err, out)
			}
		})
	}
}

// TestSuggestCapiConditionsSwap: a field whose name stays but whose
// shape moved elsewhere (Cluster API's v1beta1 conditions, moved under
// deprecated while the new-style ones take their place) is moved, not
// compared in place; the moves run in an order that never overwrites.
func TestSuggestCapiConditionsSwap(t *testing.T) {
	old := "{type: array, items: {type: object, required: [type, status], properties: {type: {type: string}, status: {type: string}, severity: {type: string}}}}"
	cur := "{type: array, items: {type: object, required: [type, status], properties: {type: {type: string}, status: {type: string}, observedGeneration: {type: integer}}}}"
	crd := crdOf(t, "{conditions: "+old+", v1beta2: {type: object, properties: {conditions: "+cur+"}}}",
		"{conditions: "+cur+", deprecated: {type: object, properties: {v1beta1: {type: object, properties: {conditions: "+old+"}}}}}")
	res, err := suggest.Suggest(crd, suggest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"hubOnly spec.deprecated",
		"rename spec.conditions -> spec.deprecated.v1beta1.conditions",
		"rename spec.v1beta2.conditions -> spec.conditions",
		"spokeOnly spec.v1beta2",
	}
	if diff := cmp.Diff(want, summary(res.Spokes[0])); diff != "" {
		t.Errorf("suggested (-want +got):\n%s", diff)
	}
}

func TestSuggestHub(t *testing.T) {
	crd := crdOf(t, "{a: {type: string}}", "{b: {type: string}}")
	res, err := suggest.Suggest(crd, suggest.Options{Hub: "v1alpha1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hub != "v1alpha1" || res.HubReason != "chosen with --hub" || res.Spokes[0].Version != "v1" {
		t.Errorf("hub %s (%s), spoke %s", res.Hub, res.HubReason, res.Spokes[0].Version)
	}
	if _, err := suggest.Suggest(crd, suggest.Options{Hub: "v9"}); err == nil || !strings.Contains(err.Error(), "--hub v9: the CRD has no such version") {
		t.Errorf("unknown hub: %v", err)
	}
}

// TestSuggestExamples: the suggestion for every example, as a golden
// file (-update rewrites them); each loads as a rule file.
func TestSuggestExamples(t *testing.T) {
	dirs, err := filepath.Glob("../examples/*/crd.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatal(dirs, err)
	}
	for _, crdFile := range dirs {
		name := filepath.Base(filepath.Dir(crdFile))
		t.Run(name, func(t *testing.T) {
			crd, err := schema.LoadFile(crdFile)
			if err != nil {
				t.Fatal(err)
			}
			res, err := suggest.Suggest(crd, suggest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out := res.YAML(suggest.Header{Source: "examples/" + name + "/crd.yaml", Check: "hubspoke check --crd examples/" + name + "/crd.yaml --rules conversion.yaml"})
			if _, err := rules.Parse("suggested.yaml", out); err != nil {
				t.Fatalf("the suggestion does not load: %v\n%s", err, out)
			}
			golden := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(out)); diff != "" {
				t.Errorf("suggestion (-want +got; -update rewrites it):\n%s", diff)
			}
		})
	}
}
