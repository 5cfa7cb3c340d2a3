package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/schema"
)

type reconciler struct {
	c      client.Client
	dyn    dynamic.Interface
	opts   Options
	hook   webhookRef
	reps   *replicas
	events events.EventRecorder
	log    *slog.Logger
}

// all returns a request for every Conversion (an endpoint or the CA
// changed).
func (r *reconciler) all(ctx context.Context) []reconcile.Request {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.ListKind))
	if err := r.c.List(ctx, &list); err != nil {
		r.log.Error("listing conversions", "error", err)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, u := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: u.GetName()}})
	}
	return out
}

// secretCA returns the ca.crt of the serving Secret.
func (r *reconciler) secretCA(ctx context.Context) ([]byte, error) {
	var s corev1.Secret
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: r.opts.CASecret}, &s); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", r.opts.Namespace, r.opts.CASecret, err)
	}
	ca := s.Data[pki.CAFile]
	if len(ca) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no %s", r.opts.Namespace, r.opts.CASecret, pki.CAFile)
	}
	return ca, nil
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := newConversion()
	if err := r.c.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var crd *apiextv1.CustomResourceDefinition
	{
		var c apiextv1.CustomResourceDefinition
		err := r.c.Get(ctx, client.ObjectKey{Name: u.GetName()}, &c)
		switch {
		case err == nil:
			crd = &c
		case !apierrors.IsNotFound(err):
			return reconcile.Result{}, err
		}
	}
	if !u.GetDeletionTimestamp().IsZero() {
		return r.deleted(ctx, u, crd)
	}
	if !controllerutil.ContainsFinalizer(u, Finalizer) {
		controllerutil.AddFinalizer(u, Finalizer)
		if err := r.c.Update(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
	}
	prev, err := v1alpha1.GetStatus(u)
	if err != nil {
		return reconcile.Result{}, err
	}
	o := observed{name: u.GetName(), uid: string(u.GetUID()), generation: u.GetGeneration(), crd: crd, wantHook: r.hook, prev: prev}
	// The operator cannot run the webhook's Go funcs: stand-ins take
	// their names, so that the rest loads and is checked.
	funcs := standIns(u)
	o.file, o.loadErr = v1alpha1.Parse(u, rules.Options{Funcs: funcs})
	if o.loadErr == nil {
		if _, err := o.file.Converter(); err != nil {
			o.loadErr = err
		}
	}
	if o.loadErr == nil && crd != nil {
		o.staticErr = staticErrors(crd, o.file, r.hook)
	}
	ca, caErr := r.secretCA(ctx)
	o.bundle, o.bundleErr = chooseBundle(crd, r.hook, ca, caErr)
	if o.replicas, err = r.reps.ask(ctx, o.bundle, false); err != nil {
		return reconcile.Result{}, err
	}
	d := decide(o, metav1.Now())
	if d.conversion != nil {
		if err := r.configureCRD(ctx, crd, d.conversion); err != nil {
			return reconcile.Result{}, err
		}
		r.events.Eventf(u, crd, corev1.EventTypeNormal, "CRDConfigured", "Configure",
			"CRD %s converts through service %s/%s: every ready replica serves generation %d", crd.Name, r.hook.namespace, r.hook.name, o.generation)
		r.log.Info("crd configured", "crd", crd.Name, "generation", o.generation)
	}
	if o.file != nil && o.file.Storage != nil && o.file.Storage.Migrate && d.settled {
		r.migrate(ctx, u, crd, &d.status)
	}
	if !equality.Semantic.DeepEqual(prev, d.status) {
		if err := r.writeStatus(ctx, u, d.status); err != nil {
			return reconcile.Result{}, err
		}
	}
	if d.settled {
		return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
	}
	return reconcile.Result{RequeueAfter: r.opts.Poll}, nil
}

// writeStatus replaces the Conversion's status, conditions keeping their
// transition times when their status did not change.
func (r *reconciler) writeStatus(ctx context.Context, u *unstructured.Unstructured, st v1alpha1.Status) error {
	cp := u.DeepCopy()
	if err := v1alpha1.SetStatus(cp, st); err != nil {
		return err
	}
	return r.c.Status().Update(ctx, cp)
}

// configureCRD points the CRD's spec.conversion at the webhook, with the
// resourceVersion it was read at as a precondition.
func (r *reconciler) configureCRD(ctx context.Context, crd *apiextv1.CustomResourceDefinition, conv *apiextv1.CustomResourceConversion) error {
	next := crd.DeepCopy()
	next.Spec.Conversion = conv
	if r.hook.injectCAFrom != "" {
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations["cert-manager.io/inject-ca-from"] = r.hook.injectCAFrom
	}
	return r.c.Patch(ctx, next, client.MergeFromWithOptions(crd, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
}

// deleted handles a Conversion being deleted: its finalizer goes only
// when the CRD does not convert through the webhook any more.
func (r *reconciler) deleted(ctx context.Context, u *unstructured.Unstructured, crd *apiextv1.CustomResourceDefinition) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(u, Finalizer) {
		return reconcile.Result{}, nil
	}
	release := func(why string) (reconcile.Result, error) {
		controllerutil.RemoveFinalizer(u, Finalizer)
		if err := r.c.Update(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
		r.events.Eventf(u, nil, corev1.EventTypeNormal, "Deleted", "Delete", "%s", why)
		r.log.Info("conversion released", "conversion", u.GetName(), "why", why)
		return reconcile.Result{}, nil
	}
	switch {
	case crd == nil:
		return release(fmt.Sprintf("CRD %s does not exist: nothing converts through this Conversion", u.GetName()))
	case !pointsAt(crd.Spec.Conversion, r.hook):
		return release(fmt.Sprintf("CRD %s does not convert through service %s/%s", crd.Name, r.hook.namespace, r.hook.name))
	}
	versions := make([]string, 0, len(crd.Spec.Versions))
	storage := ""
	for _, v := range crd.Spec.Versions {
		versions = append(versions, v.Name)
		if v.Storage {
			storage = v.Name
		}
	}
	if len(versions) == 1 && slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		// One version, every object stored in it: no conversion is ever
		// needed again.
		next := crd.DeepCopy()
		next.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
		if err := r.c.Patch(ctx, next, client.MergeFromWithOptions(crd, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager)); err != nil {
			return reconcile.Result{}, err
		}
		return release(fmt.Sprintf("CRD %s serves one version, %s, which every object is stored in: its conversion is now strategy None", crd.Name, storage))
	}
	msg := fmt.Sprintf("kept: CRD %s converts through service %s/%s (versions %s, objects stored in %s); without this Conversion the webhook stops converting %s and every read or write through another version than the stored one fails. To delete it, first point the CRD's spec.conversion elsewhere, or serve one version only and migrate every object to it (spec.storage: {migrate: true, pruneStoredVersions: true})",
		crd.Name, r.hook.namespace, r.hook.name, strings.Join(versions, ", "), strings.Join(crd.Status.StoredVersions, ", "), crd.Spec.Names.Kind)
	r.events.Eventf(u, crd, corev1.EventTypeWarning, "DeletionBlocked", "Delete", "%s", msg)
	return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
}

// staticErrors runs check's static checks of the CRD, as it will be once
// it converts through the webhook, and the rules; it returns the errors,
// one per line.
func staticErrors(crd *apiextv1.CustomResourceDefinition, f *rules.File, hook webhookRef) string {
	sc, err := asWebhookCRD(crd, hook)
	if err != nil {
		return err.Error()
	}
	return errorLines(check.Static(sc, f), 10)
}

// asWebhookCRD returns the CRD as check reads it, with its conversion set
// to the webhook (the checks judge the CRD as it will be).
func asWebhookCRD(crd *apiextv1.CustomResourceDefinition, hook webhookRef) (*schema.CRD, error) {
	c := crd.DeepCopy()
	c.Spec.Conversion = hook.conversion(nil)
	c.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	c.ManagedFields = nil
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return schema.Load("crd "+crd.Name, data)
}

// errorLines returns the report's errors, at most limit, one per line.
func errorLines(rep *check.Report, limit int) string {
	var lines []string
	n := 0
	for _, f := range rep.Findings {
		if f.Severity != check.SeverityError {
			continue
		}
		n++
		if len(lines) < limit {
			line := f.Line()
			if f.From != "" && f.To != "" {
				line = f.From + " -> " + f.To + ": " + line
			} else if f.From != "" {
				line = f.From + ": " + line
			}
			lines = append(lines, line)
		}
	}
	if n > limit {
		lines = append(lines, fmt.Sprintf("... and %d more", n-limit))
	}
	return strings.Join(lines, "\n")
}

// standIns returns a stand-in Go rule for every funcs name the
// Conversion's rules hold: the operator links none of the webhook's funcs.
func standIns(u *unstructured.Unstructured) map[string]convertRule {
	out := map[string]convertRule{}
	spokes, _, _ := unstructured.NestedSlice(u.Object, "spec", "spokes")
	for _, s := range spokes {
		sm, _ := s.(map[string]any)
		rs, _ := sm["rules"].([]any)
		for _, r := range rs {
			rm, _ := r.(map[string]any)
			if f, ok := rm["funcs"].(map[string]any); ok {
				if name, ok := f["name"].(string); ok && name != "" {
					out[name] = standIn(name)
				}
			}
		}
	}
	return out
}
