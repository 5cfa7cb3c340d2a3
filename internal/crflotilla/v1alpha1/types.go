// Package v1alpha1 holds the typed Go API of example.com/v1alpha1 Flotilla,
// a spoke of the v1 hub: each ship's image is called img, and the schedule
// is one cron string.
package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	flotillav1 "github.com/hubspoke/hubspoke/internal/crflotilla/v1"
)

// GroupVersion is the group and version of this package's types.
var GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1alpha1"}

// AddToScheme registers Flotilla in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Flotilla{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Flotilla is the v1alpha1 version of the Flotilla kind.
type Flotilla struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlotillaSpec              `json:"spec,omitempty"`
	Status flotillav1.FlotillaStatus `json:"status,omitempty"`
}

// FlotillaSpec is the desired state of a Flotilla.
type FlotillaSpec struct {
	Ships    []Ship `json:"ships,omitempty"`
	Schedule string `json:"schedule,omitempty"`
}

// Ship is one ship.
type Ship struct {
	Name   string `json:"name"`
	Img    string `json:"img,omitempty"`
	Engine string `json:"engine,omitempty"`
	Crew   int32  `json:"crew,omitempty"`
}

// DeepCopyInto copies the receiver into out.
func (in *Flotilla) DeepCopyInto(out *Flotilla) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Ships = slices.Clone(in.Spec.Ships)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopyObject implements runtime.Object.
func (in *Flotilla) DeepCopyObject() runtime.Object {
	out := new(Flotilla)
	in.DeepCopyInto(out)
	return out
}

var _ conversion.Convertible = (*Flotilla)(nil)

// ConvertTo converts this Flotilla to the hub: img becomes image in every
// ship, the schedule string becomes its five fields.
func (src *Flotilla) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*flotillav1.Flotilla)
	if !ok {
		return fmt.Errorf("convert v1alpha1 flotilla to hub: unexpected hub type %T", dstRaw)
	}
	dst.ObjectMeta = src.ObjectMeta
	dst.Status = src.Status
	dst.Spec = flotillav1.FlotillaSpec{}
	if src.Spec.Ships != nil {
		dst.Spec.Ships = make([]flotillav1.Ship, len(src.Spec.Ships))
		for i, s := range src.Spec.Ships {
			dst.Spec.Ships[i] = flotillav1.Ship{Name: s.Name, Image: s.Img, Engine: s.Engine, Crew: s.Crew}
		}
	}
	if src.Spec.Schedule != "" {
		f := strings.Split(src.Spec.Schedule, " ")
		if len(f) != 5 {
			return fmt.Errorf("schedule %q is not five fields", src.Spec.Schedule)
		}
		dst.Spec.Schedule = &flotillav1.Schedule{Minute: f[0], Hour: f[1], DayOfMonth: f[2], Month: f[3], DayOfWeek: f[4]}
	}
	return nil
}

// ConvertFrom converts from the hub: image becomes img in every ship, the
// schedule's fields are joined.
func (dst *Flotilla) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*flotillav1.Flotilla)
	if !ok {
		return fmt.Errorf("convert hub flotilla to v1alpha1: unexpected hub type %T", srcRaw)
	}
	dst.ObjectMeta = src.ObjectMeta
	dst.Status = src.Status
	dst.Spec = FlotillaSpec{}
	if src.Spec.Ships != nil {
		dst.Spec.Ships = make([]Ship, len(src.Spec.Ships))
		for i, s := range src.Spec.Ships {
			dst.Spec.Ships[i] = Ship{Name: s.Name, Img: s.Image, Engine: s.Engine, Crew: s.Crew}
		}
	}
	if s := src.Spec.Schedule; s != nil {
		dst.Spec.Schedule = strings.Join([]string{s.Minute, s.Hour, s.DayOfMonth, s.Month, s.DayOfWeek}, " ")
	}
	return nil
}
