// Package deploy renders what a cluster needs to run hubspoke's conversion
// webhook for a set of CustomResourceDefinitions: Namespace,
// ServiceAccount, the rules in a ConfigMap, a Deployment of the slim
// webhook binary, its PodDisruptionBudget and Service, the certificates
// (by cert-manager, or generated here with package pki), and each CRD with
// its spec.conversion pointing at the Service.
//
// The objects are built with the Kubernetes API types, in a fixed order
// (what an object refers to comes before it; the CRDs last, once their
// webhook can answer), one per YAML document, with the
// app.kubernetes.io labels — ready for `kubectl apply -f -` or as a
// kustomize base.
//
// Sizing follows the webhook's measured memory model ([Resources]); the
// pod's termination grace period covers the server's drain ([Options]
// ShutdownDelay and ShutdownGrace); the pods spread over nodes and zones,
// and a rollout or a node drain keeps all but one replica serving.
package deploy

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/schema"
)

// Defaults of [Options].
const (
	DefaultNamespace       = "hubspoke-system"
	DefaultName            = "hubspoke-webhook"
	DefaultImage           = "ghcr.io/hubspoke/hubspoke-webhook:latest"
	DefaultReplicas        = 3
	DefaultMaxRequestBytes = 32 << 20
	// DefaultShutdownDelay and DefaultShutdownGrace are the webhook
	// server's own defaults (server.DefaultShutdownDelay and
	// server.DefaultShutdownGrace), passed explicitly so that the pod's
	// termination grace period is computed from the values it runs with.
	DefaultShutdownDelay = 5 * time.Second
	DefaultShutdownGrace = 20 * time.Second
)

// Paths and ports inside the pod and on the Service.
const (
	ConvertPath   = "/convert"
	ServicePort   = 443
	ContainerPort = 8443
	rulesDir      = "/etc/hubspoke/rules"
	certDir       = "/etc/hubspoke/tls"
	// terminationMargin is added to the drain for the kubelet's own
	// SIGTERM delivery and process exit.
	terminationMargin = 5 * time.Second
)

// CertMode says who issues the webhook's serving certificate.
type CertMode string

const (
	// CertManager renders a cert-manager CA chain (a self-signed Issuer,
	// a CA Certificate, a CA Issuer) and the serving Certificate; the
	// CRDs carry cert-manager.io/inject-ca-from so cainjector fills
	// caBundle.
	CertManager CertMode = "cert-manager"
	// Hubspoke renders a CA and a serving certificate made here (package
	// pki) in Secrets, with the CA in each CRD's caBundle; `hubspoke certs
	// rotate` renews them.
	Hubspoke CertMode = "hubspoke"
)

// Options describe a deployment. Zero fields take the defaults above.
type Options struct {
	Namespace string
	Name      string // of the Service, Deployment, ServiceAccount, ...
	Image     string
	Replicas  int32 // at least 2
	// MaxRequestBytes is the largest ConversionReview the webhook accepts;
	// the memory request and limit are sized from it (see Resources).
	MaxRequestBytes int64
	ShutdownDelay   time.Duration
	ShutdownGrace   time.Duration
	// Certs chooses the certificate issuer (CertManager by default).
	Certs CertMode
	// CA and Serving are the hubspoke-mode certificates; when nil they are
	// generated (the serving certificate for the Service's names, signed
	// by CA).
	CA      *pki.CA
	Serving *pki.KeyPair
	// CABundle is the caBundle to write into the CRDs and the serving
	// Secret's ca.crt (default: CA alone). To re-render a running
	// deployment, pass the certificates and the bundle it holds
	// (rotate.Load): mid-rotation the bundle holds two CAs.
	CABundle []byte
}

// Input is one CRD and the rule file that converts its versions.
type Input struct {
	CRD       *schema.CRD
	Rules     *rules.File
	RulesData []byte // the rule file as written, for the ConfigMap
}

// LoadInputs reads CRD files (every CustomResourceDefinition in each) and
// rule files and pairs each CRD with the rule file of its group and kind. Every CRD needs exactly one rule file
// and every rule file a CRD; a rule file must name every version of its
// CRD (hub or spoke).
func LoadInputs(crdFiles, ruleFiles []string, read func(string) ([]byte, error)) ([]Input, error) {
	if len(crdFiles) == 0 {
		return nil, errors.New("deploy: no CRD file")
	}
	var rfs []*ruleFile
	for _, p := range ruleFiles {
		data, err := read(p)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		f, err := rules.Parse(p, data)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		if _, err := f.Converter(); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		rfs = append(rfs, &ruleFile{f: f, data: data})
	}
	var out []Input
	var errs []error // pairing problems, all of them
	seen := map[string]string{}
	for _, p := range crdFiles {
		data, err := read(p)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		crds, err := schema.LoadAll(p, data)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		if len(crds) == 0 {
			return nil, fmt.Errorf("deploy: %s: no CustomResourceDefinition found", p)
		}
		for _, crd := range crds {
			in, err := pairInput(p, crd, rfs, seen, &errs)
			if err != nil {
				return nil, err
			}
			if in != nil {
				out = append(out, *in)
			}
		}
	}
	for _, rf := range rfs {
		if !rf.used {
			errs = append(errs, fmt.Errorf("deploy: rule file %s converts %s.%s, but no CRD file is of that group and kind",
				rf.f.Name, rf.f.Kind, rf.f.Group))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ruleFile is a rule file LoadInputs read, and whether a CRD uses it.
type ruleFile struct {
	f    *rules.File
	data []byte
	used bool
}

// pairInput pairs crd, read from file p, with its rule file; problems
// that leave the other CRDs to check are added to errs.
func pairInput(p string, crd *schema.CRD, rfs []*ruleFile, seen map[string]string, errs *[]error) (*Input, error) {
	if prev, ok := seen[crd.Object.Name]; ok {
		return nil, fmt.Errorf("deploy: %s: CRD %s is also in %s", p, crd.Object.Name, prev)
	}
	seen[crd.Object.Name] = p
	var match *ruleFile
	for _, rf := range rfs {
		if rf.f.Group == crd.Group() && rf.f.Kind == crd.Kind() {
			if match != nil {
				return nil, fmt.Errorf("deploy: CRD %s (%s): two rule files convert %s.%s: %s and %s",
					crd.Object.Name, p, crd.Kind(), crd.Group(), match.f.Name, rf.f.Name)
			}
			match = rf
		}
	}
	if match == nil {
		*errs = append(*errs, fmt.Errorf("deploy: CRD %s (%s): no rule file converts %s.%s (give it with --rules)",
			crd.Object.Name, p, crd.Kind(), crd.Group()))
		return nil, nil
	}
	match.used = true
	have := []string{match.f.Hub}
	for _, s := range match.f.Spokes {
		have = append(have, s.Version)
	}
	for _, v := range crd.VersionNames() {
		if !slices.Contains(have, v) {
			*errs = append(*errs, fmt.Errorf("deploy: CRD %s (%s) has version %s, which rule file %s does not convert (it has %v)",
				crd.Object.Name, p, v, match.f.Name, have))
		}
	}
	return &Input{CRD: crd, Rules: match.f, RulesData: match.data}, nil
}

// Check reports what Render would refuse in o's values, once the defaults
// are applied: a namespace or name that is no DNS label, fewer than two
// replicas, a request limit under 1 MiB, a negative shutdown delay.
func (o Options) Check() error { return o.defaults() }

func (o *Options) defaults() error {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.Namespace, DefaultNamespace)
	def(&o.Name, DefaultName)
	def(&o.Image, DefaultImage)
	if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.ShutdownDelay == 0 {
		o.ShutdownDelay = DefaultShutdownDelay
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.Certs == "" {
		o.Certs = CertManager
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("deploy: namespace %q: %s", o.Namespace, errs[0])
	}
	if errs := validation.IsDNS1035Label(o.Name); len(errs) > 0 {
		return fmt.Errorf("deploy: name %q (a Service name): %s", o.Name, errs[0])
	}
	if len(o.Name) > 63-len("-serving-tls") {
		return fmt.Errorf("deploy: name %q: at most %d characters, so that the Secrets' names stay labels", o.Name, 63-len("-serving-tls"))
	}
	if o.Replicas < 2 {
		return fmt.Errorf("deploy: %d replicas: a conversion webhook needs at least 2, or every restart makes its CRDs unavailable", o.Replicas)
	}
	if o.MaxRequestBytes < 1<<20 {
		return fmt.Errorf("deploy: max request bytes %d: at least 1 MiB (one object may be 1.5 MiB in etcd)", o.MaxRequestBytes)
	}
	if o.ShutdownDelay < 0 || o.ShutdownGrace <= 0 {
		return errors.New("deploy: the shutdown delay must not be negative and the shutdown grace must be positive")
	}
	if o.Certs != CertManager && o.Certs != Hubspoke {
		return fmt.Errorf("deploy: certificates %q: want %q or %q", o.Certs, CertManager, Hubspoke)
	}
	return nil
}

// Render returns every object of the deployment, in apply order.
func Render(inputs []Input, opts Options) ([]any, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		return nil, errors.New("deploy: no CRD to deploy")
	}
	n := names{opts.Namespace, opts.Name}
	var objs []any
	objs = append(objs, n.namespace(), n.serviceAccount())
	var caBundle []byte
	switch opts.Certs {
	case CertManager:
		objs = append(objs, n.certManager()...)
	case Hubspoke:
		if opts.CA == nil {
			ca, err := pki.NewCA(pki.CAOptions{CommonName: opts.Name + "." + opts.Namespace + " webhook CA"})
			if err != nil {
				return nil, err
			}
			opts.CA, opts.Serving = ca, nil
		}
		if opts.Serving == nil {
			kp, err := opts.CA.IssueService(opts.Namespace, opts.Name, pki.CertOptions{})
			if err != nil {
				return nil, err
			}
			opts.Serving = kp
		}
		caBundle = opts.CABundle
		if caBundle == nil {
			caBundle = pki.Bundle(opts.CA.Cert)
		}
		roots, err := pki.ParseCertificates(caBundle)
		if err != nil {
			return nil, fmt.Errorf("deploy: CA bundle: %w", err)
		}
		if err := pki.Verify([]*x509.Certificate{opts.Serving.Cert}, roots,
			pki.ServiceServerName(opts.Namespace, opts.Name), time.Now()); err != nil {
			return nil, fmt.Errorf("deploy: the serving certificate would not be trusted by the API server: %w", err)
		}
		objs = append(objs, n.caSecret(opts.CA), n.servingSecret(opts.Serving, caBundle))
	}
	cm, err := n.rulesConfigMap(inputs)
	if err != nil {
		return nil, err
	}
	objs = append(objs, cm, n.service(), n.deployment(opts, inputs, cm), n.pdb())
	for _, in := range inputs {
		objs = append(objs, n.crd(in.CRD.Object, opts.Certs, caBundle))
	}
	return objs, nil
}

// WriteYAML writes objs as YAML documents separated by "---", each
// without null fields or status.
func WriteYAML(w io.Writer, objs []any) error {
	ms, err := Unstructured(objs)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for i, m := range ms {
		y, err := yaml.Marshal(m)
		if err != nil {
			return fmt.Errorf("deploy: encoding object %d: %w", i+1, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// Unstructured returns objs as JSON objects without null fields or status,
// as they are applied.
func Unstructured(objs []any) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(objs))
	for i, o := range objs {
		j, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("deploy: encoding object %d: %w", i+1, err)
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			return nil, fmt.Errorf("deploy: encoding object %d: %w", i+1, err)
		}
		delete(m, "status")
		dropNulls(m)
		out = append(out, m)
	}
	return out, nil
}

// dropNulls removes null members (creationTimestamp: null and the like)
// from every object in v.
func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil {
				delete(v, k)
				continue
			}
			dropNulls(x)
		}
	case []any:
		for _, x := range v {
			dropNulls(x)
		}
	}
}

type names struct{ ns, name string }

func (n names) labels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "hubspoke-webhook",
		"app.kubernetes.io/instance":   n.name,
		"app.kubernetes.io/component":  "conversion-webhook",
		"app.kubernetes.io/part-of":    "hubspoke",
		"app.kubernetes.io/managed-by": "hubspoke",
	}
}

// selector is the subset of labels that picks the webhook's pods; it
// never changes, as a Deployment's selector may not.
func (n names) selector() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "hubspoke-webhook",
		"app.kubernetes.io/instance": n.name,
	}
}

func (n names) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: n.ns, Labels: n.labels()}
}

// Secret names: the serving certificate (mounted by the pods) and, in
// hubspoke mode, the CA that signs it.
func (n names) servingSecretName() string { return n.name + "-serving-tls" }
func (n names) caSecretName() string      { return n.name + "-ca" }

// Selector returns the labels that select the pods of the deployment
// named name.
func Selector(name string) map[string]string { return names{"", name}.selector() }

// ServingSecretName and CASecretName are the Secrets of a deployment named
// name.
func ServingSecretName(name string) string { return names{"", name}.servingSecretName() }
func CASecretName(name string) string      { return names{"", name}.caSecretName() }

func (n names) namespace() *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: n.ns, Labels: mergeLabels(n.labels(), map[string]string{
			// The webhook runs under the restricted Pod Security Standard.
			"pod-security.kubernetes.io/enforce": "restricted",
		})},
	}
}

func (n names) serviceAccount() *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: n.meta(n.name),
		// The webhook never calls the API server.
		AutomountServiceAccountToken: &no,
	}
}

// RulesKey is the ConfigMap key, and the file name in the pods, of the
// rules of the CRD crdName.
func RulesKey(crdName string) string { return crdName + ".yaml" }

func (n names) rulesConfigMap(inputs []Input) (*corev1.ConfigMap, error) {
	// Keyed by CRD name (unique, a valid key): rule files of different
	// CRDs are often all called conversion.yaml.
	data := map[string]string{}
	for _, in := range inputs {
		data[RulesKey(in.CRD.Object.Name)] = string(in.RulesData)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: n.meta(n.name + "-rules"),
		Data:       data,
	}, nil
}

func (n names) service() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: n.meta(n.name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: n.selector(),
			Ports: []corev1.ServicePort{{
				Name: "https",
				Port: ServicePort,
				// A number, not the port's name: tools that resolve the
				// Service without the pods (kube-proxy-less test clusters,
				// the sandbox) need it, and deploy owns both ends.
				TargetPort:  intstr.FromInt32(ContainerPort),
				Protocol:    corev1.ProtocolTCP,
				AppProtocol: ptr("https"),
			}},
		},
	}
}

func (n names) pdb() *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	always := policyv1.AlwaysAllow
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: n.meta(n.name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &one,
			Selector:       &metav1.LabelSelector{MatchLabels: n.selector()},
			// A pod that is not ready serves nothing; evicting it must
			// not be blocked (a node drain would hang on a crash-looping pod).
			UnhealthyPodEvictionPolicy: &always,
		},
	}
}

func (n names) deployment(opts Options, inputs []Input, cm *corev1.ConfigMap) *appsv1.Deployment {
	args := []string{"serve",
		"--cert-dir=" + certDir,
		"--addr=:" + strconv.Itoa(ContainerPort),
		"--path=" + ConvertPath,
		"--max-request-bytes=" + strconv.FormatInt(opts.MaxRequestBytes, 10),
		"--shutdown-delay=" + opts.ShutdownDelay.String(),
		"--shutdown-grace=" + opts.ShutdownGrace.String(),
		"--log-format=json",
	}
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--rules="+rulesDir+"/"+k)
	}
	res := Resources(opts.MaxRequestBytes)
	grace := int64((opts.ShutdownDelay + opts.ShutdownGrace + terminationMargin + time.Second - 1) / time.Second)
	no, yes := false, true
	uid := int64(65532)
	maxUnavailable, maxSurge := intstr.FromInt32(0), intstr.FromInt32(1)
	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS,
			}},
			PeriodSeconds:    period,
			TimeoutSeconds:   2,
			FailureThreshold: failures,
		}
	}
	spread := func(key string) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{
			MaxSkew:     1,
			TopologyKey: key,
			// ScheduleAnyway: a single-node or single-zone cluster must
			// still run every replica; the scheduler spreads when it can.
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: n.selector()},
			// Spread each ReplicaSet's pods on their own, so that a
			// rollout's new pods spread too.
			MatchLabelKeys: []string{"pod-template-hash"},
		}
	}
	sum := sha256.New()
	for _, k := range keys {
		sum.Write([]byte(k))
		sum.Write([]byte{0})
		sum.Write([]byte(cm.Data[k]))
		sum.Write([]byte{0})
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: n.meta(n.name),
		Spec: appsv1.DeploymentSpec{
			Replicas: &opts.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: n.selector()},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				// Never fewer ready pods than replicas during a rollout.
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge},
			},
			MinReadySeconds: 5,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: n.labels(),
					Annotations: map[string]string{
						// A change of the rules rolls the pods.
						"hubspoke.dev/rules-sha256": hex.EncodeToString(sum.Sum(nil)),
					},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName:            n.name,
					AutomountServiceAccountToken:  &no,
					TerminationGracePeriodSeconds: &grace,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   &yes,
						RunAsUser:      &uid,
						RunAsGroup:     &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
						spread("kubernetes.io/hostname"),
						spread("topology.kubernetes.io/zone"),
					},
					Containers: []corev1.Container{{
						Name:  "webhook",
						Image: opts.Image,
						Args:  args,
						Env: []corev1.EnvVar{{
							// Collect harder before the limit, not die at it.
							Name: "GOMEMLIMIT", Value: strconv.FormatInt(res.GoMemLimit, 10),
						}},
						Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: ContainerPort, Protocol: corev1.ProtocolTCP}},
						// Ready once the certificate and every rule file are
						// loaded; unready from SIGTERM on.
						ReadinessProbe: probe("/readyz", 2, 1),
						LivenessProbe:  probe("/healthz", 10, 3),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("100m"),
								corev1.ResourceMemory: *resource.NewQuantity(res.MemoryRequest, resource.BinarySI),
							},
							Limits: corev1.ResourceList{
								corev1.ResourceMemory: *resource.NewQuantity(res.MemoryLimit, resource.BinarySI),
							},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no,
							ReadOnlyRootFilesystem:   &yes,
							RunAsNonRoot:             &yes,
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "tls", MountPath: certDir, ReadOnly: true},
							{Name: "rules", MountPath: rulesDir, ReadOnly: true},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: []corev1.Volume{
						{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: n.servingSecretName(),
							Items: []corev1.KeyToPath{
								{Key: pki.CertFile, Path: pki.CertFile},
								{Key: pki.KeyFile, Path: pki.KeyFile},
							},
						}}},
						{Name: "rules", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name},
						}}},
					},
				},
			},
		},
	}
}

// crd returns a copy of the CRD ready to apply: its conversion is the
// webhook behind the Service, its status and server-set metadata dropped.
func (n names) crd(in *apiextv1.CustomResourceDefinition, mode CertMode, caBundle []byte) *apiextv1.CustomResourceDefinition {
	c := in.DeepCopy()
	c.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	c.ObjectMeta = metav1.ObjectMeta{
		Name:        c.Name,
		Labels:      mergeLabels(c.Labels, n.labels()),
		Annotations: c.Annotations,
	}
	c.Status = apiextv1.CustomResourceDefinitionStatus{}
	port := int32(ServicePort)
	c.Spec.Conversion = &apiextv1.CustomResourceConversion{
		Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1", "v1beta1"},
			ClientConfig: &apiextv1.WebhookClientConfig{
				Service:  &apiextv1.ServiceReference{Namespace: n.ns, Name: n.name, Path: ptr(ConvertPath), Port: &port},
				CABundle: caBundle,
			},
		},
	}
	// c is a deep copy: its annotations may be edited.
	if mode == CertManager {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[InjectCAFrom] = n.ns + "/" + n.name
	} else {
		delete(c.Annotations, InjectCAFrom)
	}
	return c
}

// InjectCAFrom is cert-manager's cainjector annotation: it copies the named
// Certificate's CA into the CRD's caBundle.
const InjectCAFrom = "cert-manager.io/inject-ca-from"

// mergeLabels returns a new map with a's entries and b's, b's winning.
func mergeLabels(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

func ptr[T any](v T) *T { return &v }
