package crconvert_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/crconvert"
)

// A typed Widget in the controller-runtime style: v1 is the hub.
type WidgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size *int32 `json:"size,omitempty"`
	} `json:"spec,omitempty"`
	Status struct {
		AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	} `json:"status,omitempty"`
}

func (w *WidgetV1) DeepCopyObject() runtime.Object { c := *w; return &c }
func (*WidgetV1) Hub()                             {}

type WidgetV1alpha1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas *int32 `json:"replicas,omitempty"`
	} `json:"spec,omitempty"`
	Status struct {
		AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	} `json:"status,omitempty"`
}

func (w *WidgetV1alpha1) DeepCopyObject() runtime.Object { c := *w; return &c }

func (w *WidgetV1alpha1) ConvertTo(dst conversion.Hub) error {
	h := dst.(*WidgetV1)
	h.ObjectMeta = w.ObjectMeta
	h.Spec.Size = w.Spec.Replicas
	h.Status.AvailableReplicas = w.Status.AvailableReplicas
	return nil
}

func (w *WidgetV1alpha1) ConvertFrom(src conversion.Hub) error {
	h := src.(*WidgetV1)
	w.ObjectMeta = h.ObjectMeta
	w.Spec.Replicas = h.Spec.Size
	w.Status.AvailableReplicas = h.Status.AvailableReplicas
	return nil
}

func converter(t *testing.T) *convert.Converter {
	t.Helper()
	r, err := crconvert.Rule("widget-typed",
		func() conversion.Convertible { return &WidgetV1alpha1{} },
		func() conversion.Hub { return &WidgetV1{} })
	if err != nil {
		t.Fatal(err)
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{r}}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTypedConversionRunsInsideHubspoke(t *testing.T) {
	c := converter(t)
	in := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","namespace":"ns","uid":"u-1","resourceVersion":"7","labels":{"a":"b"}},"spec":{"replicas":3},"status":{"availableReplicas":2}}`
	hub, err := c.Convert(nil, []byte(in), "example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","uid":"u-1","resourceVersion":"7","labels":{"a":"b"}},"spec":{"size":3},"status":{"availableReplicas":2}}`
	if string(hub) != want {
		t.Errorf("got  %s\nwant %s", hub, want)
	}
	back, err := c.Convert(nil, hub, "example.com/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != in {
		t.Errorf("round trip:\n got %s\nwant %s", back, in)
	}
}

func TestTypedConversionDropsWhatItsTypesLack(t *testing.T) {
	// The typed path loses unknown spec fields: the reason to move to rules.
	c := converter(t)
	in := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":3,"extra":true}}`
	hub, err := c.Convert(nil, []byte(in), "example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(hub), "extra") {
		t.Errorf("typed conversion kept a field its types lack: %s", hub)
	}
}

func TestRuleNeedsConstructors(t *testing.T) {
	if _, err := crconvert.Rule("x", nil, nil); err == nil {
		t.Fatal("no error for missing constructors")
	}
}

// TestUnusualTopLevelKeys: top-level keys holding the JSON pointer's
// special characters are handled as keys, never as paths: no panic, and the
// typed conversion drops them like any other field its types lack.
func TestUnusualTopLevelKeys(t *testing.T) {
	c := converter(t)
	for _, key := range []string{"~", "a/b", "x~1y", "~0", "/", ""} {
		t.Run(key, func(t *testing.T) {
			in := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":3},` + strconvQuote(key) + `:{"a":1}}`
			hub, err := c.Convert(nil, []byte(in), "example.com/v1")
			if err != nil {
				t.Fatal(err)
			}
			want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3},"status":{}}`
			if string(hub) != want {
				t.Errorf("got  %s\nwant %s", hub, want)
			}
		})
	}
}

func strconvQuote(s string) string { return `"` + s + `"` }
