package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// injector sets spec.conversion.webhook.clientConfig.caBundle on CRDs whose
// conversion webhook names a Service with a CA bundle registered (by
// Sandbox.AddEndpoint), as
// cert-manager's cainjector does in a cluster.
type injector struct {
	client   apiextensionsclient.Interface
	services *network
	log      *slog.Logger

	factory apiextensionsinformers.SharedInformerFactory
	lister  listers.CustomResourceDefinitionLister
	queue   workqueue.TypedRateLimitingInterface[string]
	stopCh  chan struct{}
	wg      sync.WaitGroup
}

func startInjector(client apiextensionsclient.Interface, services *network, log *slog.Logger) *injector {
	in := &injector{
		client:   client,
		services: services,
		log:      log,
		factory:  apiextensionsinformers.NewSharedInformerFactory(client, 0),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{},
		),
		stopCh: make(chan struct{}),
	}
	informer := in.factory.Apiextensions().V1().CustomResourceDefinitions()
	in.lister = informer.Lister()
	enqueue := func(obj any) {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			in.queue.Add(crd.Name)
		}
	}
	_, _ = informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	in.factory.Start(in.stopCh)
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		for in.next() {
		}
	}()
	return in
}

// resync queues every known CRD, after a service registration changed.
func (in *injector) resync() {
	crds, err := in.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, crd := range crds {
		in.queue.Add(crd.Name)
	}
}

func (in *injector) stop() {
	in.queue.ShutDown()
	close(in.stopCh)
	in.factory.Shutdown()
	in.wg.Wait()
}

func (in *injector) next() bool {
	name, quit := in.queue.Get()
	if quit {
		return false
	}
	defer in.queue.Done(name)
	if err := in.inject(name); err != nil {
		in.log.Warn("sandbox: inject caBundle", "crd", name, "err", err)
		in.queue.AddRateLimited(name)
		return true
	}
	in.queue.Forget(name)
	return true
}

func (in *injector) inject(name string) error {
	crd, err := in.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ca, ok := wantCABundle(crd, in.services)
	if !ok {
		return nil
	}
	patch, err := caBundlePatch(ca)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-in.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err = in.client.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "hubspoke-sandbox-cainjector"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patch crd %s: %w", name, err)
	}
	in.log.Debug("sandbox: injected caBundle", "crd", name)
	return nil
}

// wantCABundle returns the CA bundle crd should carry and true when its
// conversion webhook names a registered service with a CA bundle that the
// CRD does not carry yet.
func wantCABundle(crd *apiextensionsv1.CustomResourceDefinition, services *network) ([]byte, bool) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil ||
		conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
		return nil, false
	}
	ref := conv.Webhook.ClientConfig.Service
	ca, ok := services.caBundle(ref.Namespace, ref.Name)
	if !ok || bytes.Equal(conv.Webhook.ClientConfig.CABundle, ca) {
		return nil, false
	}
	return ca, true
}

// caBundlePatch is a JSON merge patch setting the conversion webhook's
// caBundle.
func caBundlePatch(ca []byte) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"webhook": map[string]any{"clientConfig": map[string]any{"caBundle": ca}},
	}}})
}
