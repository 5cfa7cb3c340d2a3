// Package v1 holds the typed Go API of example.com/v1 Widget, the hub
// version, written the way a controller-runtime project would write it. It is
// the baseline hubspoke's benchmarks compare against.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this package's types.
var GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1"}

// AddToScheme registers Widget and WidgetList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Widget is the hub version of the Widget kind.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// Hub marks Widget as the conversion hub (sigs.k8s.io/controller-runtime/pkg/conversion.Hub).
func (*Widget) Hub() {}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// Size is the number of instances (v1alpha1 called it replicas).
	Size *int32 `json:"size,omitempty"`
	// Mode selects a performance profile.
	Mode string `json:"mode,omitempty"`
	// MinReadySeconds is how long an instance must be ready to count.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// Selector picks the instances this Widget owns.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Template describes the instances.
	Template Template `json:"template"`
}

// Template is a pod-template-like description of an instance.
type Template struct {
	Metadata TemplateMeta `json:"metadata,omitempty"`
	Spec     TemplateSpec `json:"spec"`
}

// TemplateMeta carries the labels and annotations of an instance.
type TemplateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// TemplateSpec lists the containers of an instance.
type TemplateSpec struct {
	ServiceAccountName string      `json:"serviceAccountName,omitempty"`
	Containers         []Container `json:"containers"`
}

// Container is one container of an instance.
type Container struct {
	Name      string               `json:"name"`
	Image     string               `json:"image"`
	Args      []string             `json:"args,omitempty"`
	Ports     []ContainerPort      `json:"ports,omitempty"`
	Env       []EnvVar             `json:"env,omitempty"`
	Resources ResourceRequirements `json:"resources,omitempty"`
}

// ContainerPort is a port a container listens on.
type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

// EnvVar is an environment variable of a container.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// ResourceRequirements holds resource limits and requests as strings.
type ResourceRequirements struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

// WidgetStatus is the observed state of a Widget.
type WidgetStatus struct {
	AvailableReplicas  int32              `json:"availableReplicas,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}
