package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/schema"
)

// A controller-runtime conversion webhook for the Gizmo kind
// (testdata/gizmo-crd.yaml), written with typed Go structs the way an
// operator project writes one: GizmoV1 is the hub, GizmoV2 a spoke. With
// gizmoDefects set it has the defects issue 13 names, each of which check
// must report, and nothing else:
//
//   - it drops a status list: v1 -> v2 forgets status.conditions;
//   - it refuses values its schema allows: v2 -> v1 refuses size 0;
//   - it normalises a value, so a round trip differs: timeout "007s"
//     comes back as "7s";
//   - it leaves non-nullable nulls: v2's note is a pointer without
//     omitempty, so an absent note is sent as null (which the API server
//     drops: a warning, not an error);
//   - it handles batches correctly (controller-runtime does).
//
// Without the defects it is correct: status copied, no refusal, the
// timeout's spelling kept in an annotation, no nulls.

var (
	gizmoV1GV = k8sschema.GroupVersion{Group: "example.com", Version: "v1"}
	gizmoV2GV = k8sschema.GroupVersion{Group: "example.com", Version: "v2"}
)

// gizmoDefective switches the defects on (the scheme allocates the types
// itself, so they read a package variable; set before a server starts).
var gizmoDefective bool

type GizmoCondition struct {
	Type    string  `json:"type"`
	Status  *string `json:"status,omitempty"`
	Message *string `json:"message,omitempty"`
}

type GizmoStatus struct {
	Phase      *string          `json:"phase,omitempty"`
	Conditions []GizmoCondition `json:"conditions,omitempty"`
}

type GizmoV1Spec struct {
	Replicas       *int32  `json:"replicas,omitempty"`
	TimeoutSeconds *int32  `json:"timeoutSeconds,omitempty"`
	Tier           *string `json:"tier,omitempty"`
	Note           *string `json:"note,omitempty"`
}

type GizmoV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              *GizmoV1Spec `json:"spec,omitempty"`
	Status            *GizmoStatus `json:"status,omitempty"`
}

func (*GizmoV1) Hub() {}

func (g *GizmoV1) DeepCopyObject() runtime.Object { return jsonCopy(g, &GizmoV1{}) }

type GizmoV2Spec struct {
	Size    *int32  `json:"size,omitempty"`
	Timeout *string `json:"timeout,omitempty"`
	Tier    *string `json:"tier,omitempty"`
	Note    *string `json:"note,omitempty"`
}

// gizmoV2SpecNulls is GizmoV2Spec as the defective webhook writes it: note
// without omitempty.
type gizmoV2SpecNulls struct {
	Size    *int32  `json:"size,omitempty"`
	Timeout *string `json:"timeout,omitempty"`
	Tier    *string `json:"tier,omitempty"`
	Note    *string `json:"note"`
}

type GizmoV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              *GizmoV2Spec `json:"spec,omitempty"`
	Status            *GizmoStatus `json:"status,omitempty"`
}

func (g *GizmoV2) DeepCopyObject() runtime.Object { return jsonCopy(g, &GizmoV2{}) }

// MarshalJSON writes the spec with a null note when the defects are on.
func (g *GizmoV2) MarshalJSON() ([]byte, error) {
	type plain GizmoV2
	if !gizmoDefective || g.Spec == nil {
		return json.Marshal((*plain)(g))
	}
	return json.Marshal(struct {
		*plain
		Spec gizmoV2SpecNulls `json:"spec"`
	}{(*plain)(g), gizmoV2SpecNulls(*g.Spec)})
}

const timeoutAnnotation = "example.com/timeout"

func (g *GizmoV2) ConvertTo(hubRaw conversion.Hub) error {
	hub := hubRaw.(*GizmoV1)
	hub.ObjectMeta = *g.ObjectMeta.DeepCopy()
	hub.Status = g.Status
	if g.Spec == nil {
		return nil
	}
	s := &GizmoV1Spec{Replicas: g.Spec.Size, Tier: g.Spec.Tier, Note: g.Spec.Note}
	if gizmoDefective && g.Spec.Size != nil && *g.Spec.Size == 0 {
		return errors.New("spec.size must be positive")
	}
	if g.Spec.Timeout != nil {
		n, err := strconv.Atoi(strings.TrimSuffix(*g.Spec.Timeout, "s"))
		if err != nil {
			return fmt.Errorf("spec.timeout %q: %w", *g.Spec.Timeout, err)
		}
		n32 := int32(n)
		s.TimeoutSeconds = &n32
		if !gizmoDefective && *g.Spec.Timeout != strconv.Itoa(n)+"s" {
			if hub.Annotations == nil {
				hub.Annotations = map[string]string{}
			}
			hub.Annotations[timeoutAnnotation] = *g.Spec.Timeout // keep the spelling
		}
	}
	hub.Spec = s
	return nil
}

func (g *GizmoV2) ConvertFrom(hubRaw conversion.Hub) error {
	hub := hubRaw.(*GizmoV1)
	g.ObjectMeta = *hub.ObjectMeta.DeepCopy()
	if hub.Status != nil {
		st := *hub.Status
		if gizmoDefective {
			st.Conditions = nil
		}
		if st.Phase != nil || st.Conditions != nil {
			g.Status = &st
		}
	}
	spelled, hasSpelling := g.Annotations[timeoutAnnotation]
	delete(g.Annotations, timeoutAnnotation)
	if len(g.Annotations) == 0 && hub.Annotations != nil && len(hub.Annotations) == 1 && hasSpelling {
		g.Annotations = nil
	}
	if hub.Spec == nil {
		return nil
	}
	s := &GizmoV2Spec{Size: hub.Spec.Replicas, Tier: hub.Spec.Tier, Note: hub.Spec.Note}
	if hub.Spec.TimeoutSeconds != nil {
		t := strconv.Itoa(int(*hub.Spec.TimeoutSeconds)) + "s"
		if n, err := strconv.Atoi(strings.TrimSuffix(spelled, "s")); hasSpelling && err == nil && n == int(*hub.Spec.TimeoutSeconds) {
			t = spelled
		}
		s.Timeout = &t
	}
	g.Spec = s
	return nil
}

func jsonCopy(in, out runtime.Object) runtime.Object {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// gizmoScheme registers the Gizmo types.
func gizmoScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gizmoV1GV.WithKind("Gizmo"), &GizmoV1{})
	s.AddKnownTypeWithName(gizmoV2GV.WithKind("Gizmo"), &GizmoV2{})
	metav1.AddToGroupVersion(s, gizmoV1GV)
	metav1.AddToGroupVersion(s, gizmoV2GV)
	return s
}

// TestControllerRuntimeGizmo checks the Gizmo webhook over real TLS in both
// review versions: the defective one gets exactly its defects reported,
// the correct one no error.
func TestControllerRuntimeGizmo(t *testing.T) {
	crd, err := schema.LoadFile("testdata/gizmo-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		defects bool
		want    []string
	}{
		{name: "defective", defects: true, want: []string{
			// v1 -> v2 -> v1: size 0 refused on the way back: unreadable.
			"error convert-back v1->v2 ",
			// status.conditions dropped, both directions (with them the
			// whole status when it held nothing else).
			"error hub-spoke-hub v1->v2 /status",
			"error hub-spoke-hub v1->v2 /status/conditions",
			// "007s" comes back as "7s".
			"error spoke-hub-spoke v2->v1 /spec/timeout",
			"error spoke-hub-spoke v2->v1 /status",
			"error spoke-hub-spoke v2->v1 /status/conditions",
			// null note: the API server drops it.
			"warning api-server-coerced v1->v2 /spec/note",
			// Typed structs with omitempty drop empty lists and objects:
			// harmless, warnings (the correct webhook does it too).
			"warning hub-spoke-hub v1->v2 /status",
			"warning hub-spoke-hub v1->v2 /status/conditions",
			// size 0 refused.
			"warning refused v2->v1 ",
			"warning spoke-hub-spoke v2->v1 /status",
			"warning spoke-hub-spoke v2->v1 /status/conditions",
		}},
		{name: "correct", defects: false, want: []string{
			"warning hub-spoke-hub v1->v2 /status",
			"warning hub-spoke-hub v1->v2 /status/conditions",
			"warning spoke-hub-spoke v2->v1 /status",
			"warning spoke-hub-spoke v2->v1 /status/conditions",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gizmoDefective = tt.defects
			srv := httptest.NewTLSServer(crconversion.NewWebhookHandler(gizmoScheme(), crconversion.NewRegistry()))
			t.Cleanup(srv.Close)
			for _, rv := range []string{"v1", "v1beta1"} {
				c, err := New(FromCRD(crd, Options{URL: srv.URL + "/convert", HTTPClient: srv.Client(), ReviewVersion: rv}))
				if err != nil {
					t.Fatal(err)
				}
				r := Conformance(context.Background(), c, crd)
				// controller-runtime refuses objects already at the desired
				// version (the API server never sends them): a warning.
				want := []string{"warning protocol-same-version v1->v1", "warning protocol-same-version v2->v2"}
				if diff := cmp.Diff(want, grades(r, false)); diff != "" {
					t.Errorf("review %s: conformance (-want +got):\n%s\n%s", rv, diff, reportText(r))
				}
				laws := check.Laws(context.Background(), crd, c, check.Options{Objects: 200, Seed: 3})
				if diff := cmp.Diff(tt.want, findingKeys(laws)); diff != "" {
					t.Errorf("review %s: laws (-want +got):\n%s\n%s", rv, diff, reportText(laws))
				}
				for _, g := range laws.Generated {
					if g.Valid*10 < g.Generated*9 {
						t.Errorf("review %s: %s: only %d of %d generated objects valid", rv, g.Version, g.Valid, g.Generated)
					}
				}
			}
		})
	}
}

// BenchmarkGizmoBlackBox is a full black-box run on the defective Gizmo
// webhook: conformance and every law on 1,000 objects per law and version
// pair, webhook and checker in one process (measure its CPU time with
// /usr/bin/time around the test binary, -benchtime 1x).
func BenchmarkGizmoBlackBox(b *testing.B) {
	crd, err := schema.LoadFile("testdata/gizmo-crd.yaml")
	if err != nil {
		b.Fatal(err)
	}
	gizmoDefective = true
	srv := httptest.NewTLSServer(crconversion.NewWebhookHandler(gizmoScheme(), crconversion.NewRegistry()))
	b.Cleanup(srv.Close)
	c, err := New(FromCRD(crd, Options{URL: srv.URL + "/convert", HTTPClient: srv.Client()}))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r := Conformance(context.Background(), c, crd)
		r.Merge(check.Laws(context.Background(), crd, c, check.Options{Objects: 1000, Seed: 1}))
		if r.Errors() == 0 {
			b.Fatal("the defective webhook passed")
		}
		b.ReportMetric(float64(r.Objects), "objects/op")
	}
}
