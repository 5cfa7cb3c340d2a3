package deploy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/pki"
)

// Defaults of [PlatformOptions].
const (
	DefaultPrefix           = "hubspoke"
	DefaultOperatorImage    = "ghcr.io/hubspoke/hubspoke:latest"
	DefaultOperatorReplicas = 2
	// AdmissionPort is the operator's admission webhook port in its pod;
	// HealthPort and MetricsPort its probes' and metrics' (plain HTTP).
	AdmissionPort = 9443
	HealthPort    = 8081
	MetricsPort   = 8080
	// AggregateToOperator labels the ClusterRoles aggregated into the
	// operator's access to custom resources: grant it get and list on a
	// CRD's resources for admission to compare existing objects, update for
	// spec.storage migrations.
	AggregateToOperator = "hubspoke.dev/aggregate-to-operator"
	admissionCertDir    = "/etc/hubspoke/admission-tls"
	backupDir           = "/var/lib/hubspoke/backups"
)

// PlatformOptions describe hubspoke run by its operator: the Conversion
// CRD, the operator (admission webhook and rollout), and a Deployment of
// the slim webhook serving every Conversion live (serve
// --watch-conversions). The Helm chart charts/hubspoke renders the same
// objects for the same choices (its templates are generated from this
// code). Zero fields take the defaults.
type PlatformOptions struct {
	// Namespace of everything namespaced (DefaultNamespace).
	Namespace string
	// Prefix names the objects: PREFIX-webhook (its Service, Deployment,
	// ...), PREFIX-operator (DefaultPrefix).
	Prefix string
	// WebhookImage is the slim webhook image (DefaultImage), OperatorImage
	// the hubspoke image (DefaultOperatorImage).
	WebhookImage, OperatorImage string
	// Replicas of the webhook, at least 2 (DefaultReplicas).
	Replicas int32
	// MaxRequestBytes sizes the webhook's memory (see Resources); one of
	// ChartSizes in the chart (DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// Port is the webhook's port in its pod (ContainerPort, 8443); 10250
	// for clusters whose control plane reaches nodes only on 443 and
	// 10250. The Service's port stays 443.
	Port int32
	// HostNetwork runs the webhook in the nodes' network, for clusters
	// whose control plane cannot reach pod addresses (a CNI overlay); its
	// Port must then be free on every node (10250 is the kubelet's).
	HostNetwork bool
	// PriorityClassName of the webhook's pods (none by default).
	PriorityClassName string
	// Certs: CertManager (Issuers and Certificates, cainjector fills the
	// caBundles) or Hubspoke (Secrets made here with package pki: CA,
	// serving certificates of the webhook and of the operator).
	Certs CertMode
	// CA is hubspoke mode's CA (generated when nil).
	CA *pki.CA
	// Selector picks the Conversions this platform serves (all by default).
	Selector string
	// NetworkPolicy, ServiceMonitor, PrometheusRule and GrafanaDashboard
	// add those objects (the last three for the Prometheus Operator and
	// Grafana's dashboard sidecar).
	NetworkPolicy, ServiceMonitor, PrometheusRule, GrafanaDashboard bool
	// NoNamespace leaves the Namespace out (Helm installs into an existing
	// one, or creates it itself).
	NoNamespace bool
}

func (o *PlatformOptions) defaults() error {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.Namespace, DefaultNamespace)
	def(&o.Prefix, DefaultPrefix)
	def(&o.WebhookImage, DefaultImage)
	def(&o.OperatorImage, DefaultOperatorImage)
	if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.Port == 0 {
		o.Port = ContainerPort
	}
	if o.Certs == "" {
		o.Certs = CertManager
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("deploy: namespace %q: %s", o.Namespace, errs[0])
	}
	if errs := validation.IsDNS1035Label(o.Prefix + "-operator"); len(errs) > 0 || len(o.Prefix) > MaxPrefixLength {
		return fmt.Errorf("deploy: prefix %q: a DNS label of at most %d characters (it names the Services PREFIX-webhook and PREFIX-operator, and their Secrets)", o.Prefix, MaxPrefixLength)
	}
	if o.Replicas < 2 {
		return fmt.Errorf("deploy: %d replicas: a conversion webhook needs at least 2, or every restart makes its CRDs unavailable", o.Replicas)
	}
	if o.MaxRequestBytes < 1<<20 {
		return fmt.Errorf("deploy: max request bytes %d: at least 1 MiB (one object may be 1.5 MiB in etcd)", o.MaxRequestBytes)
	}
	if o.Port < 1024 || o.Port > 65535 {
		return fmt.Errorf("deploy: port %d: want 1024 to 65535 (the webhook runs as a user without privileges)", o.Port)
	}
	if o.HostNetwork && o.Port == 10250 {
		return errors.New("deploy: port 10250 with host network: it is the kubelet's port on every node; give another port")
	}
	if o.Certs != CertManager && o.Certs != Hubspoke {
		return fmt.Errorf("deploy: certificates %q: want %q or %q", o.Certs, CertManager, Hubspoke)
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("deploy: selector %q: %w", o.Selector, err)
	}
	return nil
}

// MaxPrefixLength keeps every name made from the prefix a DNS label.
const MaxPrefixLength = 63 - len("-operator-serving-tls")

// platform names the objects of a platform.
type platform struct {
	o        PlatformOptions
	hook     names // the webhook's Service, Deployment, ...
	operator string
}

func (p platform) operatorLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "hubspoke-operator",
		"app.kubernetes.io/instance":   p.operator,
		"app.kubernetes.io/component":  "operator",
		"app.kubernetes.io/part-of":    "hubspoke",
		"app.kubernetes.io/managed-by": "hubspoke",
	}
}

func (p platform) operatorSelector() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "hubspoke-operator", "app.kubernetes.io/instance": p.operator}
}

func (p platform) operatorMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: p.o.Namespace, Labels: p.operatorLabels()}
}

func (p platform) clusterMeta(name string, l map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: l}
}

// OperatorServingSecretName is the Secret of the operator's admission
// webhook certificate.
func (p platform) operatorSecret() string { return p.operator + "-serving-tls" }

// RenderPlatform returns every object of the platform, in apply order.
func RenderPlatform(opts PlatformOptions) ([]any, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	p := platform{o: opts, hook: names{opts.Namespace, opts.Prefix + "-webhook"}, operator: opts.Prefix + "-operator"}
	var objs []any
	if !opts.NoNamespace {
		objs = append(objs, p.hook.namespace())
	}
	objs = append(objs, ConversionCRD())
	hookSA := p.hook.serviceAccount()
	hookSA.AutomountServiceAccountToken = nil // it watches Conversions
	opSA := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: p.operatorMeta(p.operator)}
	objs = append(objs, hookSA, opSA)
	objs = append(objs, p.rbac()...)
	var caBundle []byte
	switch opts.Certs {
	case CertManager:
		objs = append(objs, p.hook.certManager()...)
		objs = append(objs, p.operatorCertificate())
	case Hubspoke:
		ca := opts.CA
		if ca == nil {
			var err error
			if ca, err = pki.NewCA(pki.CAOptions{CommonName: p.hook.name + "." + opts.Namespace + " webhook CA"}); err != nil {
				return nil, err
			}
		}
		hookKP, err := ca.IssueService(opts.Namespace, p.hook.name, pki.CertOptions{})
		if err != nil {
			return nil, err
		}
		opKP, err := ca.IssueService(opts.Namespace, p.operator, pki.CertOptions{})
		if err != nil {
			return nil, err
		}
		caBundle = pki.Bundle(ca.Cert)
		opSecret := p.hook.servingSecret(opKP, caBundle)
		opSecret.ObjectMeta = p.operatorMeta(p.operatorSecret())
		objs = append(objs, p.hook.caSecret(ca), p.hook.servingSecret(hookKP, caBundle), opSecret)
	}
	objs = append(objs, p.webhookService(), p.operatorService(), p.webhookDeployment(), p.operatorDeployment(), p.hook.pdb(), p.operatorPDB())
	injectFrom := ""
	if opts.Certs == CertManager {
		injectFrom = opts.Namespace + "/" + p.operator
	}
	objs = append(objs, admissionWebhook(p.operator, opts.Namespace, p.operator, caBundle, injectFrom, p.operatorLabels()))
	if opts.NetworkPolicy {
		objs = append(objs, p.networkPolicies()...)
	}
	if opts.ServiceMonitor {
		objs = append(objs, p.serviceMonitors()...)
	}
	if opts.PrometheusRule {
		objs = append(objs, PrometheusRule(opts.Namespace, p.hook.name, p.hook.labels()))
	}
	if opts.GrafanaDashboard {
		objs = append(objs, p.dashboard())
	}
	return objs, nil
}

// operatorCertificate is the cert-manager Certificate of the operator's
// admission webhook, signed by the webhook's CA Issuer.
func (p platform) operatorCertificate() map[string]any {
	var dns []any
	for _, d := range pki.ServiceDNSNames(p.o.Namespace, p.operator) {
		dns = append(dns, d)
	}
	meta := p.hook.unstructuredMeta(p.operator)
	l := map[string]any{}
	for k, v := range p.operatorLabels() {
		l[k] = v
	}
	meta["labels"] = l
	return map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata":   meta,
		"spec": map[string]any{
			"commonName":  pki.ServiceServerName(p.o.Namespace, p.operator),
			"dnsNames":    dns,
			"secretName":  p.operatorSecret(),
			"duration":    certManagerServingDuration,
			"renewBefore": certManagerRenewBefore,
			"privateKey":  map[string]any{"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
			"usages":      []any{"server auth", "digital signature"},
			"issuerRef":   map[string]any{"name": p.hook.caSecretName(), "kind": "Issuer", "group": "cert-manager.io"},
		},
	}
}

// rbac grants each component what it needs and nothing else: the webhook
// reads Conversions; the operator writes their status and finalizers,
// patches CRDs, reads the webhook's EndpointSlices and serving Secret, and
// reaches custom resources only through ClusterRoles aggregated to it.
func (p platform) rbac() []any {
	conv := []string{v1alpha1.Resource}
	read := []string{"get", "list", "watch"}
	hookRole := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: p.clusterMeta(p.hook.name, p.hook.labels()),
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.Group}, Resources: conv, Verbs: read}},
	}
	objects := p.operator + "-objects"
	opRole := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: p.clusterMeta(p.operator, p.operatorLabels()),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.Group}, Resources: conv, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.Resource + "/status", v1alpha1.Resource + "/finalizers"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions/status"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	aggregated := &rbacv1.ClusterRole{
		TypeMeta:        metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta:      p.clusterMeta(objects, p.operatorLabels()),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{AggregateToOperator: "true"}}}},
	}
	nsRole := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: p.operatorMeta(p.operator),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{p.hook.servingSecretName()}, Verbs: read},
			// Leader election: its Lease, and the events it records.
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	bind := func(name, role string, l map[string]string, sa string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: p.clusterMeta(name, l),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: p.o.Namespace}},
		}
	}
	nsBinding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: p.operatorMeta(p.operator),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: p.operator},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: p.operator, Namespace: p.o.Namespace}},
	}
	return []any{
		hookRole, bind(p.hook.name, p.hook.name, p.hook.labels(), p.hook.name),
		opRole, bind(p.operator, p.operator, p.operatorLabels(), p.operator),
		aggregated, bind(objects, objects, p.operatorLabels(), p.operator),
		nsRole, nsBinding,
	}
}

func (p platform) webhookService() *corev1.Service {
	s := p.hook.service()
	s.Spec.Ports[0].TargetPort = intstr.FromInt32(p.o.Port)
	return s
}

func (p platform) operatorService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: p.operatorMeta(p.operator),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: p.operatorSelector(),
			Ports: []corev1.ServicePort{
				{Name: "https", Port: ServicePort, TargetPort: intstr.FromInt32(AdmissionPort), Protocol: corev1.ProtocolTCP, AppProtocol: ptr("https")},
				{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromInt32(MetricsPort), Protocol: corev1.ProtocolTCP, AppProtocol: ptr("http")},
			},
		},
	}
}

// webhookDeployment is deploy's webhook Deployment serving Conversion
// objects instead of rule files.
func (p platform) webhookDeployment() *appsv1.Deployment {
	d := p.hook.deployment(Options{
		Namespace: p.o.Namespace, Name: p.hook.name, Image: p.o.WebhookImage, Replicas: p.o.Replicas,
		MaxRequestBytes: p.o.MaxRequestBytes, ShutdownDelay: DefaultShutdownDelay, ShutdownGrace: DefaultShutdownGrace,
	}, nil, &corev1.ConfigMap{})
	spec := &d.Spec.Template.Spec
	delete(d.Spec.Template.Annotations, "hubspoke.dev/rules-sha256")
	if len(d.Spec.Template.Annotations) == 0 {
		d.Spec.Template.Annotations = nil
	}
	spec.AutomountServiceAccountToken = nil
	spec.HostNetwork = p.o.HostNetwork
	if p.o.HostNetwork {
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	spec.PriorityClassName = p.o.PriorityClassName
	c := &spec.Containers[0]
	args := []string{"serve", "--watch-conversions", "--selector=" + p.o.Selector}
	for _, a := range c.Args[1:] {
		if strings.HasPrefix(a, "--addr=") {
			a = "--addr=:" + strconv.Itoa(int(p.o.Port))
		}
		args = append(args, a)
	}
	c.Args = args
	c.Ports[0].ContainerPort = p.o.Port
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "rules" })
	c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.Name == "rules" })
	return d
}

func (p platform) operatorDeployment() *appsv1.Deployment {
	replicas := int32(DefaultOperatorReplicas)
	no, yes := false, true
	uid := int64(65532)
	args := []string{"operator",
		"--namespace=" + p.o.Namespace,
		"--service=" + p.hook.name,
		"--selector=" + p.o.Selector,
		"--admission-addr=:" + strconv.Itoa(AdmissionPort),
		"--admission-cert-dir=" + admissionCertDir,
		"--health-addr=:" + strconv.Itoa(HealthPort),
		"--metrics-addr=:" + strconv.Itoa(MetricsPort),
		"--backup-dir=" + backupDir,
		"--leader-elect",
		"--log-format=json",
	}
	if p.o.Certs == CertManager {
		args = append(args, "--inject-ca-from="+p.o.Namespace+"/"+p.hook.name)
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}}, PeriodSeconds: 10}
	}
	one := intstr.FromInt32(1)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: p.operatorMeta(p.operator),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: p.operatorSelector()},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &one}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.operatorLabels()},
				Spec: corev1.PodSpec{
					ServiceAccountName: p.operator,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "operator",
						Image: p.o.OperatorImage,
						Args:  args,
						Ports: []corev1.ContainerPort{
							{Name: "https", ContainerPort: AdmissionPort, Protocol: corev1.ProtocolTCP},
							{Name: "health", ContainerPort: HealthPort, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: probe("/readyz"),
						LivenessProbe:  probe("/healthz"),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
						Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: strconv.FormatInt(512<<20/10*9, 10)}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, RunAsNonRoot: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "admission-tls", MountPath: admissionCertDir, ReadOnly: true},
							{Name: "backups", MountPath: backupDir},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: []corev1.Volume{
						{Name: "admission-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: p.operatorSecret(),
							Items:      []corev1.KeyToPath{{Key: pki.CertFile, Path: pki.CertFile}, {Key: pki.KeyFile, Path: pki.KeyFile}},
						}}},
						{Name: "backups", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

func (p platform) operatorPDB() *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	always := policyv1.AlwaysAllow
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: p.operatorMeta(p.operator),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable:             &one,
			Selector:                   &metav1.LabelSelector{MatchLabels: p.operatorSelector()},
			UnhealthyPodEvictionPolicy: &always,
		},
	}
}

// networkPolicies admit traffic to the webhook's and the operator's HTTPS
// ports (the API server's addresses differ from cluster to cluster, so
// from anywhere) and to the operator's metrics; everything else into the
// pods is refused.
func (p platform) networkPolicies() []any {
	tcp := corev1.ProtocolTCP
	policy := func(meta metav1.ObjectMeta, sel map[string]string, ports ...int32) *networkingv1.NetworkPolicy {
		var ps []networkingv1.NetworkPolicyPort
		for _, port := range ports {
			ps = append(ps, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: new(intstr.FromInt32(port))})
		}
		return &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: meta,
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: sel},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: ps}},
			},
		}
	}
	return []any{
		policy(p.hook.meta(p.hook.name), p.hook.selector(), p.o.Port),
		policy(p.operatorMeta(p.operator), p.operatorSelector(), AdmissionPort, MetricsPort),
	}
}

// serviceMonitors scrape the webhook's /metrics over HTTPS (its
// certificate is for the Service's names, not the pods' addresses) and
// the operator's over HTTP.
func (p platform) serviceMonitors() []any {
	monitor := func(meta map[string]any, sel map[string]string, port, scheme string) map[string]any {
		ml := map[string]any{}
		for k, v := range sel {
			ml[k] = v
		}
		ep := map[string]any{"port": port, "scheme": scheme, "path": "/metrics", "interval": "30s"}
		if scheme == "https" {
			ep["tlsConfig"] = map[string]any{"insecureSkipVerify": true}
		}
		return map[string]any{
			"apiVersion": "monitoring.coreos.com/v1",
			"kind":       "ServiceMonitor",
			"metadata":   meta,
			"spec":       map[string]any{"selector": map[string]any{"matchLabels": ml}, "endpoints": []any{ep}},
		}
	}
	opMeta := p.hook.unstructuredMeta(p.operator)
	l := map[string]any{}
	for k, v := range p.operatorLabels() {
		l[k] = v
	}
	opMeta["labels"] = l
	return []any{
		monitor(p.hook.unstructuredMeta(p.hook.name), p.hook.selector(), "https", "https"),
		monitor(opMeta, p.operatorSelector(), "metrics", "http"),
	}
}

// ChartSizes are the --max-request-bytes the Helm chart offers, by the
// name its values use: the chart carries the memory sizing of each,
// computed by Resources, rather than a second copy of the model.
var ChartSizes = []struct {
	Name  string
	Bytes int64
}{
	{"8Mi", 8 << 20}, {"16Mi", 16 << 20}, {"32Mi", 32 << 20}, {"64Mi", 64 << 20},
	{"128Mi", 128 << 20}, {"256Mi", 256 << 20}, {"512Mi", 512 << 20}, {"1Gi", 1 << 30},
}
