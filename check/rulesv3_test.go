package check

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// quantitySchema is how Kubernetes declares a resource.Quantity.
const quantitySchema = `{anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true, pattern: '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'}`

// TestRulesV3UnderCheck (issue 27): check understands every new form of
// the rules: its static model raises no false alarm on a correct rule file
// (only the findings listed), and, where laws can hold, the round-trip
// laws pass on generated objects of both schemas.
func TestRulesV3UnderCheck(t *testing.T) {
	routes := func(leaf string) string {
		inner := "{type: object, properties: {" + leaf + ": {type: integer}}}"
		for range 3 {
			inner = "{type: object, properties: {" + leaf + ": {type: integer}, routes: {type: array, maxItems: 2, items: " + inner + "}}}"
		}
		return "              routes: {type: array, maxItems: 2, items: " + inner + "}\n"
	}
	tests := []struct {
		name, spoke, hub, rules string
		laws                    bool  // run the laws too
		want                    []key // static findings
		accepted                []Accepted
	}{
		{name: "a label to a field",
			spoke: "              a: {type: string}\n",
			hub:   "              a: {type: string}\n              clusterName: {type: string, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'}\n",
			rules: `    - rename: {from: 'metadata.labels["example.com/cluster"]', to: spec.clusterName}` + "\n",
			laws:  true},
		{name: "a field any string to a label",
			spoke: "              a: {type: string}\n",
			hub:   "              a: {type: string}\n              clusterName: {type: string}\n",
			rules: `    - rename: {from: 'metadata.labels["example.com/cluster"]', to: spec.clusterName}` + "\n",
			want:  []key{{Check: CheckDomain, From: "v1", To: "v1alpha1", Path: "/spec/clusterName", ToPath: "/metadata/labels/example.com~1cluster", FromConstraint: "any string", ToConstraint: "label value (at most 63 characters, alphanumeric at both ends)", Severity: SeverityWarning}}},
		{name: "a number to a label",
			spoke: "              a: {type: string}\n",
			hub:   "              a: {type: string}\n              num: {type: integer}\n",
			rules: `    - rename: {from: 'metadata.labels["example.com/num"]', to: spec.num}` + "\n",
			want:  []key{{Check: CheckDomain, From: "v1", To: "v1alpha1", Path: "/spec/num", ToPath: "/metadata/labels/example.com~1num", FromConstraint: "type integer", ToConstraint: "labels hold strings", Severity: SeverityError}}},
		{name: "missing is false, defaults differ on purpose",
			spoke: "              enabled: {type: boolean}\n",
			hub:   "              enabled: {type: boolean, default: false}\n",
			rules: "    - missing: {path: spec.enabled, hub: false}\n",
			laws:  true},
		{name: "a constant of the hub",
			spoke: "              a: {type: string}\n",
			hub:   "              a: {type: string}\n              format: {type: string, enum: [v2, v3]}\n",
			rules: "    - constant: {path: spec.format, value: v2}\n",
			laws:  true},
		{name: "a drop is an accepted loss",
			spoke:    "              a: {type: string}\n              debug: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
			hub:      "              a: {type: string}\n",
			rules:    "    - drop: {path: spec.debug, acknowledgeLoss: debug traces are for v1alpha1 only}\n",
			laws:     true,
			accepted: []Accepted{{From: "v1alpha1", To: "v1", Pointer: "/spec/debug", Reason: "debug traces are for v1alpha1 only", Pos: "rules.yaml:11"}}},
		{name: "an integer enum",
			spoke: "              level: {type: integer, enum: [0, 1, 2]}\n",
			hub:   "              level: {type: string, enum: [Low, Medium, High]}\n",
			rules: "    - enum: {from: spec.level, values: {0: Low, 1: Medium, 2: High}}\n",
			laws:  true},
		{name: "an integer enum missing a value",
			spoke: "              level: {type: integer, enum: [0, 1, 2]}\n",
			hub:   "              level: {type: string, enum: [Low, Medium, High]}\n",
			rules: "    - enum: {from: spec.level, values: {0: Low, 2: High}}\n",
			want: []key{
				{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/level", ToPath: "/spec/level", FromConstraint: "enum [0,1,2]", ToConstraint: "enum mapping of [0,2]", Severity: SeverityError},
				{Check: CheckDomain, From: "v1", To: "v1alpha1", Path: "/spec/level", ToPath: "/spec/level", FromConstraint: `enum ["Low","Medium","High"]`, ToConstraint: `enum mapping of ["High","Low"]`, Severity: SeverityError},
			}},
		{name: "a quantity and its bytes",
			spoke: "              memory: " + quantitySchema + "\n",
			hub:   "              memoryBytes: {type: integer, format: int64}\n",
			rules: "    - quantity: {from: spec.memory, to: spec.memoryBytes, spoke: string, hub: integer, otherwise: keep}\n",
			laws:  true},
		{name: "a quantity with no integer form",
			spoke: "              memory: " + quantitySchema + "\n",
			hub:   "              memoryBytes: {type: integer, format: int64}\n",
			rules: "    - quantity: {from: spec.memory, to: spec.memoryBytes, spoke: string, hub: integer}\n",
			want:  []key{{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/memory", ToPath: "/spec/memoryBytes", FromConstraint: "any quantity", ToConstraint: "whole numbers of the base unit", Severity: SeverityWarning}}},
		{name: "scale by a non-divisor",
			spoke: "              bytes: {type: integer, minimum: 0, maximum: 1000000000000}\n",
			hub:   "              kib: {type: integer, minimum: 0, maximum: 976562500}\n",
			rules: "    - scale: {from: spec.bytes, to: spec.kib, divide: 1024, round: ceil}\n",
			laws:  true},
		{name: "a tree of routes",
			spoke: routes("t"),
			hub:   routes("timeout"),
			rules: "    - rename: {from: 'spec.routes[**].t', to: 'spec.routes[**].timeout'}\n",
			laws:  true},
		{name: "an empty list is absent",
			spoke: "              homes: {type: array, maxItems: 1, items: {type: object, properties: {city: {type: string}}}}\n",
			hub:   "              home: {type: object, properties: {city: {type: string}}}\n",
			rules: "    - listToItem: {from: spec.homes, to: spec.home, empty: absent}\n",
			laws:  true},
		{name: "derived from a label",
			spoke: "              a: {type: string}\n",
			hub:   "              a: {type: string}\n              clusterName: {type: string}\n",
			rules: `    - hubOnly: {path: spec.clusterName, derive: 'object.metadata.?labels[?"example.com/cluster"]'}` + "\n",
			laws:  true},
		{name: "restore kept and dropIfEmpty",
			spoke: "              ref: {type: object, properties: {group: {type: string}}}\n",
			hub:   "              ref: {type: object, properties: {group: {type: string}}}\n              paused: {type: boolean}\n",
			rules: "    - hubOnly: {path: spec.paused, restore: kept}\n" +
				`    - cel: {from: spec.ref, toHub: self, fromHub: '{?"group": self.?group.orValue("") != "" ? self.?group : optional.none()}', otherwise: keep, dropIfEmpty: true}` + "\n",
			laws: true},
		{name: "a rule with a condition",
			spoke: "              a: {type: string}\n",
			hub:   "              b: {type: string}\n",
			rules: `    - rename: {from: spec.a, to: spec.b, when: 'object.metadata.namespace != "legacy"'}` + "\n"},
		{name: "cel reading the object, refusing with a message",
			spoke: "              num: {type: integer}\n              ns: {type: string}\n",
			hub:   "              num: {type: integer}\n              ns: {type: string}\n",
			rules: `    - cel: {from: spec.num, toHub: 'self < 0 ? fail("num must not be negative") : self', fromHub: self}` + "\n" +
				`    - cel: {from: spec.ns, toHub: 'self == object.metadata.namespace ? optional.none() : optional.of(self)', fromHub: self, otherwise: keep}` + "\n"},
		{name: "merge keys",
			spoke: "              ratio: {type: integer}\n              limit: {type: integer}\n",
			hub:   "              ratio: {type: string}\n              limit: {type: string}\n",
			rules: "    - intToString: &r {from: spec.ratio}\n    - intToString: {<<: *r, from: spec.limit}\n",
			laws:  true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := crdOf(t, tt.spoke, tt.hub)
			rf := rulesOfFile(t, tt.rules)
			r := Static(crd, rf)
			if diff := cmp.Diff(tt.want, keysOf(r)); diff != "" {
				t.Errorf("static findings (-want +got):\n%s\n%s", diff, textOf(r))
			}
			if diff := cmp.Diff(tt.accepted, r.Accepted); diff != "" {
				t.Errorf("accepted losses (-want +got):\n%s", diff)
			}
			if !tt.laws {
				return
			}
			conv, err := rf.Converter()
			if err != nil {
				t.Fatal(err)
			}
			lr := Laws(context.Background(), crd, conv, Options{Objects: 150, Seed: 27, ShrinkTime: -1})
			var bad []string
			for _, f := range lr.Findings {
				if f.Severity == SeverityError {
					bad = append(bad, f.Check+" "+f.From+"->"+f.To+" "+f.Path+": "+f.Message)
				}
			}
			if len(bad) > 0 {
				t.Errorf("laws:\n%s\n%s", strings.Join(bad, "\n"), textOf(lr))
			}
		})
	}
}
