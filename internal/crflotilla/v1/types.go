// Package v1 holds the typed Go API of example.com/v1 Flotilla, the hub,
// written the way a controller-runtime project would write it: the baseline
// of hubspoke's benchmark of rules inside list items.
package v1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this package's types.
var GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1"}

// AddToScheme registers Flotilla in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Flotilla{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Flotilla is the hub version of the Flotilla kind.
type Flotilla struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlotillaSpec   `json:"spec,omitempty"`
	Status FlotillaStatus `json:"status,omitempty"`
}

// FlotillaStatus is the observed state of a Flotilla, the same in every
// version.
type FlotillaStatus struct {
	AvailableReplicas  int32              `json:"availableReplicas,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// DeepCopyInto copies the receiver into out.
func (in *FlotillaStatus) DeepCopyInto(out *FlotillaStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// Hub marks Flotilla as the conversion hub.
func (*Flotilla) Hub() {}

// FlotillaSpec is the desired state of a Flotilla.
type FlotillaSpec struct {
	Ships    []Ship    `json:"ships,omitempty"`
	Schedule *Schedule `json:"schedule,omitempty"`
}

// Ship is one ship (v1alpha1 calls its image img).
type Ship struct {
	Name   string `json:"name"`
	Image  string `json:"image,omitempty"`
	Engine string `json:"engine,omitempty"`
	Crew   int32  `json:"crew,omitempty"`
}

// Schedule is a cron schedule by field (v1alpha1 writes it as one string).
type Schedule struct {
	Minute     string `json:"minute"`
	Hour       string `json:"hour"`
	DayOfMonth string `json:"dayOfMonth"`
	Month      string `json:"month"`
	DayOfWeek  string `json:"dayOfWeek"`
}

// DeepCopyInto copies the receiver into out.
func (in *Flotilla) DeepCopyInto(out *Flotilla) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Ships = slices.Clone(in.Spec.Ships)
	if in.Spec.Schedule != nil {
		s := *in.Spec.Schedule
		out.Spec.Schedule = &s
	}
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopyObject implements runtime.Object.
func (in *Flotilla) DeepCopyObject() runtime.Object {
	out := new(Flotilla)
	in.DeepCopyInto(out)
	return out
}
