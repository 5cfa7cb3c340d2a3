// Package v1alpha1 holds the typed Go API of example.com/v1alpha1 Widget, a
// spoke of the v1 hub, written the way a controller-runtime project would
// write it. Its spec.replicas is the hub's spec.size; everything else is the
// same as in v1.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	widgetv1 "github.com/hubspoke/hubspoke/internal/crwidget/v1"
)

// GroupVersion is the group and version of this package's types.
var GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1alpha1"}

// AddToScheme registers Widget and WidgetList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Widget is the v1alpha1 version of the Widget kind.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec            `json:"spec,omitempty"`
	Status widgetv1.WidgetStatus `json:"status,omitempty"`
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// Replicas is the number of instances (v1 calls it size).
	Replicas *int32 `json:"replicas,omitempty"`
	// Mode selects a performance profile.
	Mode string `json:"mode,omitempty"`
	// MinReadySeconds is how long an instance must be ready to count.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// Selector picks the instances this Widget owns.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Template describes the instances.
	Template widgetv1.Template `json:"template"`
}
