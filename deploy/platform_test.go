package deploy_test

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hubspoke/hubspoke/deploy"
)

func platformObjects(t *testing.T, opts deploy.PlatformOptions) []any {
	t.Helper()
	objs, err := deploy.RenderPlatform(opts)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func findObject[T any](objs []any, name string, get func(T) string) T {
	var zero T
	for _, o := range objs {
		if v, ok := o.(T); ok && get(v) == name {
			return v
		}
	}
	return zero
}

// TestRenderPlatform holds the platform's objects to what they are for.
func TestRenderPlatform(t *testing.T) {
	objs := platformObjects(t, deploy.PlatformOptions{Selector: "team=a", Port: 10250})
	hook := findObject(objs, "hubspoke-webhook", func(d *appsv1.Deployment) string { return d.Name })
	if hook == nil {
		t.Fatal("no webhook Deployment")
	}
	c := hook.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--watch-conversions", "--selector=team=a", "--addr=:10250"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("webhook args %v lack %s", c.Args, want)
		}
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--rules") {
			t.Errorf("the platform's webhook serves Conversion objects, not files: %s", a)
		}
	}
	if hook.Spec.Template.Spec.AutomountServiceAccountToken != nil && !*hook.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Error("the webhook watches Conversions: it needs its service account's token")
	}
	if c.Ports[0].ContainerPort != 10250 {
		t.Errorf("container port %d", c.Ports[0].ContainerPort)
	}
	svc := findObject(objs, "hubspoke-webhook", func(s *corev1.Service) string { return s.Name })
	if svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.IntVal != 10250 {
		t.Errorf("webhook Service ports %+v: 443 to the pods' port", svc.Spec.Ports)
	}
	role := findObject(objs, "hubspoke-webhook", func(r *rbacv1.ClusterRole) string { return r.Name })
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"conversions"}) || slices.ContainsFunc(role.Rules[0].Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
		t.Errorf("the webhook may read Conversions and nothing else: %+v", role.Rules)
	}
	vwc := findObject(objs, "hubspoke-operator", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) string { return v.Name })
	if w := vwc.Webhooks[0]; *w.FailurePolicy != admissionregistrationv1.Fail || w.ClientConfig.Service.Name != "hubspoke-operator" || vwc.Annotations[deploy.InjectCAFrom] != "hubspoke-system/hubspoke-operator" {
		t.Errorf("admission fails closed, at the operator's Service, with cert-manager's CA: %+v %v", w, vwc.Annotations)
	}
	op := findObject(objs, "hubspoke-operator", func(d *appsv1.Deployment) string { return d.Name })
	if !slices.Contains(op.Spec.Template.Spec.Containers[0].Args, "--inject-ca-from=hubspoke-system/hubspoke-webhook") {
		t.Errorf("operator args %v: with cert-manager, CRDs get the inject annotation", op.Spec.Template.Spec.Containers[0].Args)
	}

	own := platformObjects(t, deploy.PlatformOptions{Certs: deploy.Hubspoke})
	vwc = findObject(own, "hubspoke-operator", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) string { return v.Name })
	if len(vwc.Webhooks[0].ClientConfig.CABundle) == 0 || vwc.Annotations[deploy.InjectCAFrom] != "" {
		t.Error("hubspoke certificates: the admission webhook carries the CA itself")
	}
	op = findObject(own, "hubspoke-operator", func(d *appsv1.Deployment) string { return d.Name })
	for _, a := range op.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--inject-ca-from") {
			t.Errorf("hubspoke certificates: %s", a)
		}
	}
	for _, name := range []string{"hubspoke-webhook-ca", "hubspoke-webhook-serving-tls", "hubspoke-operator-serving-tls"} {
		if s := findObject(own, name, func(s *corev1.Secret) string { return s.Name }); s == nil {
			t.Errorf("hubspoke certificates: no Secret %s", name)
		}
	}
}

func TestPlatformOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opts deploy.PlatformOptions
		want string
	}{
		{"one replica", deploy.PlatformOptions{Replicas: 1}, "1 replicas: a conversion webhook needs at least 2"},
		{"privileged port", deploy.PlatformOptions{Port: 443}, "port 443: want 1024 to 65535"},
		{"kubelet's port on the host", deploy.PlatformOptions{HostNetwork: true, Port: 10250}, "port 10250 with host network"},
		{"bad prefix", deploy.PlatformOptions{Prefix: "Hub"}, `prefix "Hub": a DNS label`},
		{"long prefix", deploy.PlatformOptions{Prefix: strings.Repeat("a", deploy.MaxPrefixLength+1)}, "a DNS label of at most"},
		{"bad selector", deploy.PlatformOptions{Selector: "a==b==c"}, `selector "a==b==c"`},
		{"bad certs", deploy.PlatformOptions{Certs: "vault"}, `certificates "vault"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := deploy.RenderPlatform(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
