// Package crdvalidation validates a CustomResourceDefinition with the API
// server's own code, as kube-apiserver validates it on create (Validate,
// Object): names, scope, versions and their storage flag, schemas
// (structural, defaults, CEL rules and their cost), subresources, printer
// columns, selectable fields and the conversion stanza; and on update
// (Update): the same, ratcheted against the CRD in the cluster, with what
// may not change and the versions its status.storedVersions still needs.
// A CRD Validate passes is one `kubectl create -f` would not refuse as
// invalid.
//
// It links the API server's validation code and, through it, client-go;
// the packages that must stay free of client-go (schema, check) leave
// this step to their commands.
package crdvalidation

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hubspoke/hubspoke/schema"
)

// Error is one reason the API server refuses the CRD.
type Error struct {
	// Field is the field path as the API server names it (spec.scope).
	Field string
	// Pointer is the same field as a JSON pointer into the CRD as written
	// (/spec/scope). The API server validates its internal form, whose
	// conversion stanza is laid out differently: the field
	// spec.conversion.webhookClientConfig.service is at the pointer
	// /spec/conversion/webhook/clientConfig/service.
	Pointer string
	// Pos is "file:line" of the field (or of the nearest field above it
	// that the file has) in the CRD's file; empty from Object.
	Pos string
	// Message is the API server's word on it, without the field
	// (Unsupported value: "Namespace": supported values: ...). A value
	// that would take more than a line (a whole list of versions) is left
	// out.
	Message string
}

func (e Error) Error() string {
	s := e.Message
	if e.Field != "" {
		s = e.Field + ": " + s
	}
	if e.Pos != "" {
		s = e.Pos + ": " + s
	}
	return s
}

// Validate returns every reason the API server would refuse to create the
// CRD, in the API server's order, each at its line of the CRD's file; none
// when it would accept it. See Object.
func Validate(crd *schema.CRD) []Error {
	errs := Object(crd.Object)
	for i := range errs {
		errs[i].Pos = crd.Pos(errs[i].Pointer)
	}
	return errs
}

// Object returns every reason the API server would refuse to create obj
// (a CRD built in code, or a file's CRD changed), with Pos empty. The CRD
// is defaulted and prepared as the API server does before it validates
// (status cleared, storedVersions set to the storage version); obj is not
// changed.
func Object(obj *apiextv1.CustomResourceDefinition) []Error {
	in, err := internal(obj)
	if err != nil {
		return []Error{{Message: err.Error()}}
	}
	prepareForCreate(in)
	var out []Error
	for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), in) {
		if strings.HasPrefix(e.Field, "status.") {
			continue // the status is the API server's own (prepareForCreate): its errors follow from spec's
		}
		out = append(out, Error{Field: e.Field, Pointer: pointer(e.Field), Message: body(e)})
	}
	return out
}

// internalFields maps the fields of the API server's internal form that
// apiextensions.k8s.io/v1 lays out differently to their v1 place.
var internalFields = []struct{ internal, v1 string }{
	{"spec.conversion.webhookClientConfig", "spec.conversion.webhook.clientConfig"},
	{"spec.conversion.conversionReviewVersions", "spec.conversion.webhook.conversionReviewVersions"},
}

// pointer returns the JSON pointer, in the CRD as written, of a field the
// validation names.
func pointer(f string) string {
	for _, m := range internalFields {
		if rest, ok := strings.CutPrefix(f, m.internal); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			f = m.v1 + rest
			break
		}
	}
	ptr := schema.FieldPointer(f)
	// A printer column's path is named by its Go field (JSONPath), not
	// its JSON key (jsonPath).
	if rest, ok := strings.CutSuffix(ptr, "/JSONPath"); ok && strings.Contains(rest, "/additionalPrinterColumns/") {
		ptr = rest + "/jsonPath"
	}
	return ptr
}

// longValue is the length beyond which a refused value is left out of the
// message: the API server quotes whole lists of versions, schemas
// included.
const longValue = 120

// body is the API server's message for e, without a long value.
func body(e *field.Error) string {
	full := e.ErrorBody()
	short := *e
	short.BadValue = field.OmitValueType{}
	if s := short.ErrorBody(); len(full)-len(s) > longValue {
		return s
	}
	return full
}

// Update returns every reason the API server would refuse to replace
// live, the CRD in the cluster, with obj (kubectl apply or replace of a
// changed file): the update validation, which ratchets what live already
// had, refuses changes to what cannot change (scope, names once
// established), and holds obj's versions against live's
// status.storedVersions (errors at status.storedVersions). Pos is empty.
// Neither CRD is changed.
func Update(obj, live *apiextv1.CustomResourceDefinition) []Error {
	next, err := internal(obj)
	if err != nil {
		return []Error{{Message: err.Error()}}
	}
	old, err := internal(live)
	if err != nil {
		return []Error{{Message: err.Error()}}
	}
	prepareForUpdate(next, old)
	var out []Error
	for _, e := range validation.ValidateCustomResourceDefinitionUpdate(context.Background(), next, old) {
		out = append(out, Error{Field: e.Field, Pointer: pointer(e.Field), Message: body(e)})
	}
	return out
}

// internal defaults a copy of obj and converts it to the API server's
// internal form, which its validation takes.
func internal(obj *apiextv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	v1 := obj.DeepCopy()
	apiextv1.SetObjectDefaults_CustomResourceDefinition(v1)
	var in apiextensions.CustomResourceDefinition
	if err := apiextv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, &in, nil); err != nil {
		return nil, fmt.Errorf("cannot convert %s to the API server's internal form: %w", obj.Name, err)
	}
	return &in, nil
}

// prepareForUpdate does what the API server does to a CRD replacing old
// before validating it: the object's system metadata is old's (an apply
// patches the live object; only labels and annotations come from the
// file), the status is old's, and storedVersions gains the new storage
// version (PrepareForUpdate of the CRD strategy).
func prepareForUpdate(crd, old *apiextensions.CustomResourceDefinition) {
	meta := *old.ObjectMeta.DeepCopy()
	meta.Labels, meta.Annotations = crd.Labels, crd.Annotations
	crd.ObjectMeta = meta
	crd.Status = *old.Status.DeepCopy()
	addStorageVersion(crd)
}

// prepareForCreate does what the API server's CRD strategy does to a new
// CRD before validating it (k8s.io/apiextensions-apiserver's
// registry/customresourcedefinition, PrepareForCreate, whose package links
// etcd's client): the status a user wrote is dropped, and storedVersions
// holds the storage version.
func prepareForCreate(crd *apiextensions.CustomResourceDefinition) {
	crd.Status = apiextensions.CustomResourceDefinitionStatus{}
	crd.Generation = 1
	addStorageVersion(crd)
}

// addStorageVersion adds the first version marked storage to
// status.storedVersions, unless it is there, as both PrepareForCreate and
// PrepareForUpdate do.
func addStorageVersion(crd *apiextensions.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if !apiextensions.IsStoredVersion(crd, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
			return
		}
	}
}
