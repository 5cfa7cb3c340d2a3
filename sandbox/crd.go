package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/hubspoke/hubspoke/schema/crdfile"
)

// defaultWait bounds InstallCRD and DeleteCRD when ctx has no deadline.
// Deleting a CRD deletes its objects one by one: a few thousand take a
// while on a loaded machine.
const defaultWait = 2 * time.Minute

// ReadCRDFile reads a CustomResourceDefinition (apiextensions.k8s.io/v1)
// from a YAML or JSON file, the first of a file of several documents, with
// hubspoke's one CRD reader (package crdfile): as kubectl reads the file and
// the API server decodes the CRD with strict field validation, every
// problem named at its file:line:col.
func ReadCRDFile(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, err := crdfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return crd.Object, nil
}

// InstallCRD creates crd, or updates the CRD of that name to crd's spec, and
// waits until it is Established and every served version answers a LIST
// (right after establishing, reads may answer 429 or 404 for a moment). When
// the CRD's conversion webhook names a Service with a CA bundle registered,
// the bundle is set before the CRD is written. It returns the CRD as stored.
//
// Without a deadline on ctx it waits at most two minutes.
func (s *Sandbox) InstallCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultWait)
		defer cancel()
	}
	crd = crd.DeepCopy()
	if ca, ok := wantCABundle(crd, s.net); ok {
		crd.Spec.Conversion.Webhook.ClientConfig.CABundle = ca
	}
	client := s.crds.ApiextensionsV1().CustomResourceDefinitions()
	crd.ResourceVersion = ""
	_, err := client.Create(ctx, crd, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec = crd.Spec
			cur.Labels, cur.Annotations = crd.Labels, crd.Annotations
			_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: install crd %s: %w", crd.Name, err)
	}

	var last error
	for {
		got, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
		if err == nil {
			err = s.checkServing(ctx, got)
			if err == nil {
				return got, nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sandbox: install crd %s: %w (last: %w)", crd.Name, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkServing returns nil once crd is Established with its names accepted
// and a LIST through every served version succeeds.
func (s *Sandbox) checkServing(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, t := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.NamesAccepted, apiextensionsv1.Established} {
		if !hasCondition(crd, t) {
			return fmt.Errorf("condition %s is not true yet", t)
		}
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		if _, err := s.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return fmt.Errorf("list %s: %w", gvr, err)
		}
	}
	return nil
}

func hasCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// DeleteCRD deletes the CRD of that name, with its objects, and waits until
// it is gone. A CRD that does not exist is not an error.
//
// Without a deadline on ctx it waits at most two minutes.
func (s *Sandbox) DeleteCRD(ctx context.Context, name string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultWait)
		defer cancel()
	}
	client := s.crds.ApiextensionsV1().CustomResourceDefinitions()
	err := client.Delete(ctx, name, metav1.DeleteOptions{})
	for {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sandbox: delete crd %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox: delete crd %s: %w", name, errors.Join(ctx.Err(), errors.New("still present")))
		case <-time.After(50 * time.Millisecond):
		}
		_, err = client.Get(ctx, name, metav1.GetOptions{})
	}
}
