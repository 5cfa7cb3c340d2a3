package check

import (
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/schema"
)

// TestGeneratorHonoursTheSchema: every generated object of a schema using
// formats, patterns, int-or-string with a pattern, an embedded resource, a
// required chain deeper than the optional-field depth, list-map keys with
// defaults, and a CEL rule is valid as the API server judges it, and the
// deep required chain is always there.
func TestGeneratorHonoursTheSchema(t *testing.T) {
	crd, err := schema.Load("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
            type: object
            required: [a]
            x-kubernetes-validations:
            - rule: "!has(self.min) || !has(self.max) || self.min <= self.max"
            properties:
              min: {type: integer}
              max: {type: integer}
              when: {type: string, format: date-time}
              mail: {type: string, format: email}
              ip: {type: string, format: ipv4}
              id: {type: string, format: uuid}
              code: {type: string, pattern: '^[A-Z]{2}-[0-9]{3}$', maxLength: 6}
              port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], pattern: '^[a-z]+$'}
              ref: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer, minimum: 1, maximum: 3}
                    protocol: {type: string, default: TCP, enum: [TCP, UDP]}
              a:
                type: object
                required: [b]
                properties:
                  b:
                    type: object
                    required: [c]
                    properties:
                      c:
                        type: object
                        required: [d]
                        properties:
                          d:
                            type: object
                            required: [e]
                            properties:
                              e:
                                type: object
                                required: [f]
                                properties:
                                  f:
                                    type: object
                                    required: [g]
                                    properties:
                                      g:
                                        type: object
                                        required: [h]
                                        properties:
                                          h: {type: string, minLength: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	v := crd.Version("v1")
	objs, g, err := ValidObjects(crd, v, 300, 5)
	if err != nil {
		t.Fatal(err)
	}
	if g.Valid != g.Generated {
		t.Errorf("%d of %d generated objects valid; problems: %s", g.Valid, g.Generated, g.Problems)
	}
	seen := map[string]bool{}
	for _, o := range objs {
		h, ok := lookupPointer(o, "/spec/a/b/c/d/e/f/g/h")
		if !ok || h == "" {
			t.Fatalf("required chain cut: %v", o["spec"])
		}
		spec := o["spec"].(map[string]any)
		if p, ok := spec["port"].(string); ok && p != "" {
			seen["int-or-string as string"] = true
		}
		if _, ok := spec["port"].(int64); ok {
			seen["int-or-string as integer"] = true
		}
		if l, ok := spec["ports"].([]any); ok && len(l) > 1 {
			seen["list map with several items"] = true
		}
		if c, ok := spec["code"].(string); ok && strings.Contains(c, "-") {
			seen["pattern"] = true
		}
		if r, ok := spec["ref"].(map[string]any); ok && r["kind"] != nil {
			seen["embedded resource"] = true
		}
		if spec["min"] != nil && spec["max"] != nil {
			seen["both CEL-bound fields"] = true
		}
	}
	for _, want := range []string{"int-or-string as string", "int-or-string as integer", "list map with several items", "pattern", "embedded resource", "both CEL-bound fields"} {
		if !seen[want] {
			t.Errorf("300 objects never had: %s", want)
		}
	}
}

// TestReportLimit: text output prints at most Limit findings per check and
// version pair and counts the rest; JSON lists them all.
func TestReportLimit(t *testing.T) {
	r := &Report{Limit: 2}
	for _, p := range []string{"/a", "/b", "/c", "/d"} {
		r.Add(Finding{Check: LawSpokeRoundTrip, From: "v1", To: "v2", Path: p, Message: "lost"})
	}
	r.Add(Finding{Check: LawRefused, Severity: SeverityWarning, From: "v1", To: "v2", Message: "refused"})
	text := textOf(r)
	for _, want := range []string{"/a: lost", "/b: lost", "  ... and 2 more spoke-hub-spoke findings (-o json lists them all)\n", "refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "/c: lost") {
		t.Errorf("text prints past the limit:\n%s", text)
	}
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `"check": "spoke-hub-spoke"`); n != 4 {
		t.Errorf("JSON lists %d of 4 findings", n)
	}
}
