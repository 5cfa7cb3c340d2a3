package schema

import "testing"

func TestFieldPointer(t *testing.T) {
	for _, c := range []struct{ field, want string }{
		{"", ""},
		{"<nil>", ""},
		{"spec.scope", "/spec/scope"},
		{"spec.endpoints[0].port", "/spec/endpoints/0/port"},
		{"metadata.labels[app.kubernetes.io/name]", "/metadata/labels/app.kubernetes.io~1name"},
		{"metadata.annotations[a~b]", "/metadata/annotations/a~0b"},
		{`spec.m["quoted"]`, "/spec/m/quoted"},
		{"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
			"/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations/0/rule"},
	} {
		if got := FieldPointer(c.field); got != c.want {
			t.Errorf("FieldPointer(%q) = %q, want %q", c.field, got, c.want)
		}
	}
}
