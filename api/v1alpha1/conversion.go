// Package v1alpha1 is the Conversion resource (hubspoke.dev/v1alpha1,
// cluster-scoped): a rule file applied to a cluster as an object, served
// live by `hubspoke serve --watch-conversions` and rolled out by
// `hubspoke operator`.
//
// A Conversion's spec is the rule file's own spec, read by the one rule
// loader (package convert/rules): [Parse] turns an object into the
// document the loader reads, so a file that `hubspoke serve --rules` loads
// is a Conversion that `kubectl apply` creates, and the other way round.
// Its status is written by the operator ([Status]); what each webhook
// replica serves is reported by the replica itself at [ServedPath]
// ([Served]).
//
// The package links neither client-go nor the API server: the slim
// webhook binary uses it.
package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hubspoke/hubspoke/convert/rules"
)

// The resource's names.
const (
	Group    = "hubspoke.dev"
	Version  = "v1alpha1"
	Kind     = "Conversion"
	ListKind = "ConversionList"
	Resource = "conversions"
	Singular = "conversion"
	// CRDName is the name of the Conversion CustomResourceDefinition.
	CRDName = Resource + "." + Group
)

// GroupVersion, GroupVersionKind and GroupVersionResource of Conversion.
var (
	GroupVersion         = schema.GroupVersion{Group: Group, Version: Version}
	GroupVersionKind     = GroupVersion.WithKind(Kind)
	GroupVersionResource = GroupVersion.WithResource(Resource)
)

// Condition types of a Conversion's status.
const (
	// Accepted: the rules load and pass check's static checks and laws
	// against the live CRD (the admission webhook refuses the rest; the
	// condition tells why a generation written while it was down is not
	// served).
	ConditionAccepted = "Accepted"
	// Serving: every ready replica of the webhook serves this generation.
	ConditionServing = "Serving"
	// CRDConfigured: the CRD's spec.conversion points at the webhook, with
	// a caBundle that verifies every ready replica and the review versions
	// the webhook answers.
	ConditionCRDConfigured = "CRDConfigured"
	// StorageMigrating: a storage migration asked for by spec.storage runs.
	ConditionStorageMigrating = "StorageMigrating"
	// Migrated: every object is stored at the storage version (and
	// storedVersions pruned when asked).
	ConditionMigrated = "Migrated"
)

// Status is a Conversion's status, written by the operator.
type Status struct {
	// ObservedGeneration is the generation the conditions describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ServedGeneration is the newest generation every ready replica
	// serves (0: none yet); rollout acknowledgements name it.
	ServedGeneration int64 `json:"servedGeneration,omitempty"`
	// CRD is the CustomResourceDefinition the Conversion converts.
	CRD string `json:"crd,omitempty"`
	// Replicas is what each endpoint of the webhook's Service serves.
	Replicas []Replica `json:"replicas,omitempty"`
	// Migration is the last storage migration's outcome.
	Migration *Migration `json:"migration,omitempty"`
	// Conditions: Accepted, Serving, CRDConfigured, StorageMigrating,
	// Migrated.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Replica is one endpoint of the webhook's Service.
type Replica struct {
	// Name is the pod's name, or its address when the endpoint names no
	// pod.
	Name string `json:"name"`
	// Address is the endpoint's IP and port.
	Address string `json:"address,omitempty"`
	// Ready is the endpoint's ready condition: the API server sends
	// conversions only to ready endpoints.
	Ready bool `json:"ready"`
	// ServedGeneration is the generation the replica serves (0: none, or
	// it could not be asked).
	ServedGeneration int64 `json:"servedGeneration,omitempty"`
	// Message says why the replica does not serve the Conversion's
	// generation: its load error, or why it could not be asked.
	Message string `json:"message,omitempty"`
}

// Migration is the outcome of the storage migration of a generation.
type Migration struct {
	Generation     int64    `json:"generation"`
	StorageVersion string   `json:"storageVersion,omitempty"`
	Objects        int64    `json:"objects"`
	Rewritten      int64    `json:"rewritten"`
	StoredVersions []string `json:"storedVersions,omitempty"`
	// Backup is the backup file written before it, with its object count
	// and checksum.
	Backup       string `json:"backup,omitempty"`
	BackupSHA256 string `json:"backupSHA256,omitempty"`
}

// Parse reads a Conversion object as the rule file it is: the loader sees
// apiVersion, kind, metadata.name and spec, as a file holding them. Errors
// name the object and the field (the positions of a document made from an
// object would point nowhere a person can look).
func Parse(obj *unstructured.Unstructured, opts ...rules.Options) (*rules.File, error) {
	doc, err := Document(obj)
	if err != nil {
		return nil, err
	}
	f, err := rules.Parse(Source(obj.GetName()), doc, opts...)
	if err != nil {
		var re *rules.Error
		if errors.As(err, &re) {
			re.Line, re.Column = 0, 0
		}
		return nil, err
	}
	return f, nil
}

// Source is how a Conversion object is named in errors, as a rule file is
// by its path.
func Source(name string) string { return "conversion " + name }

// Document returns the rule-file document of a Conversion object (JSON,
// which is YAML): its apiVersion, kind, metadata.name and spec.
func Document(obj *unstructured.Unstructured) ([]byte, error) {
	doc := map[string]any{
		"apiVersion": obj.GetAPIVersion(),
		"kind":       obj.GetKind(),
		"metadata":   map[string]any{"name": obj.GetName()},
	}
	if spec, ok := obj.Object["spec"]; ok {
		doc["spec"] = spec
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Source(obj.GetName()), err)
	}
	return b, nil
}

// GetStatus decodes a Conversion's status (zero when it has none).
func GetStatus(obj *unstructured.Unstructured) (Status, error) {
	var s Status
	raw, ok := obj.Object["status"]
	if !ok || raw == nil {
		return s, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: status: %w", Source(obj.GetName()), err)
	}
	return s, nil
}

// SetStatus replaces a Conversion's status.
func SetStatus(obj *unstructured.Unstructured, s Status) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	obj.Object["status"] = m
	return nil
}
