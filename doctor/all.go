package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"
)

// Summary is one CRD of a cluster-wide diagnosis.
type Summary struct {
	CRD string `json:"crd"`
	// Healthy is true when no check found an error.
	Healthy bool `json:"healthy"`
	// Cause is the first error, the one to fix first.
	Cause *Finding `json:"cause,omitempty"`
	// Warnings counts the warnings.
	Warnings int `json:"warnings"`
	// Impact says what else in the cluster breaks while this CRD's
	// conversions fail: each line says whether it was observed or follows
	// from the CRD's versions.
	Impact []string `json:"impact,omitempty"`
	// Report is the whole diagnosis.
	Report *Report `json:"report"`
	// Error is set when the CRD could not be diagnosed (access denied).
	Error string `json:"error,omitempty"`
}

// AllReport is a diagnosis of every CRD with a conversion webhook.
type AllReport struct {
	CRDs []Summary `json:"crds"`
}

// Broken counts the CRDs with an error (or that could not be diagnosed).
func (a *AllReport) Broken() int {
	n := 0
	for _, s := range a.CRDs {
		if !s.Healthy {
			n++
		}
	}
	return n
}

// WriteText writes one line per CRD (healthy, or its first cause) and,
// under a broken one, what else breaks while it is down.
func (a *AllReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range a.CRDs {
		switch {
		case s.Error != "":
			fmt.Fprintf(tw, "%s\tERROR\tcould not be diagnosed: %s\n", s.CRD, s.Error)
		case s.Healthy:
			what := "healthy"
			if s.Warnings > 0 {
				what = fmt.Sprintf("healthy (%d warnings)", s.Warnings)
			}
			fmt.Fprintf(tw, "%s\tOK\t%s\n", s.CRD, what)
		default:
			where := ""
			if s.Cause.Endpoint != nil {
				where = " at " + s.Cause.Endpoint.String()
			}
			fmt.Fprintf(tw, "%s\tERROR\t%s%s: %s\n", s.CRD, s.Cause.Check, where, firstNonEmpty(s.Cause.Cause, s.Cause.Message))
			for _, line := range s.Impact {
				fmt.Fprintf(tw, "\t\t  while it is down: %s\n", line)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d CRDs with a conversion webhook, %d broken; hubspoke doctor CRD-NAME shows one in full\n", len(a.CRDs), a.Broken())
	return err
}

// WriteJSON writes the report as indented JSON.
func (a *AllReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(a)
}

// WriteYAML writes the report as YAML.
func (a *AllReport) WriteYAML(w io.Writer) error {
	data, err := yaml.Marshal(a)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// RunAll diagnoses every CRD of the cluster whose conversion strategy is
// Webhook, four at a time, each within o.Timeout. The error is for an
// operational failure (the CRDs could not be listed).
func RunAll(ctx context.Context, c Clients, o Options) (*AllReport, error) {
	o.defaults()
	lctx, cancel := context.WithTimeout(ctx, o.Timeout)
	list, err := c.Extensions.ApiextensionsV1().CustomResourceDefinitions().List(lctx, metav1.ListOptions{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list crds: %w", err)
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		if conv := crd.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
			crds = append(crds, crd)
		}
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	out := &AllReport{CRDs: make([]Summary, len(crds))}
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range crds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name := crds[i].Name
			s := Summary{CRD: name}
			rctx, cancel := context.WithTimeout(ctx, o.Timeout)
			defer cancel()
			d := &diagnosis{ctx: rctx, c: c, o: o, r: &Report{CRD: name}}
			if err := d.run(name); err != nil {
				s.Error = err.Error()
				out.CRDs[i] = s
				return
			}
			d.finish()
			s.Report = d.r
			s.Cause = d.r.Cause()
			s.Healthy = s.Cause == nil
			s.Warnings = d.r.Warnings()
			if !s.Healthy && d.crd != nil {
				s.Impact = d.impact()
			}
			out.CRDs[i] = s
		}()
	}
	wg.Wait()
	return out, nil
}

// impact says what else breaks in the cluster while the CRD's
// conversions fail, from what is observed (namespaces stuck deleting) and
// from what follows from its versions (which clients need a conversion).
func (d *diagnosis) impact() []string {
	crd := d.crd
	resource := crd.Spec.Names.Plural + "." + crd.Spec.Group
	preferred := preferredVersion(d.served)
	var lines []string
	// The garbage collector and the namespace controller delete every
	// resource through its preferred version, and the API server decodes
	// each object it deletes at that version: an object stored at another
	// one needs the webhook to be deleted (seen on Kubernetes 1.37: the
	// deletion fails with "StorageError: corrupt object ... object not
	// decodable"). Their lists, and the quota controller's, come from the
	// API server's watch cache, converted as the objects came in, and go
	// on.
	needs := preferred != "" && (preferred != d.storage || len(crd.Status.StoredVersions) > 1)
	if needs {
		why := fmt.Sprintf("the preferred version %s is not the storage version %s", preferred, d.storage)
		if preferred == d.storage {
			why = fmt.Sprintf("objects may still be stored at %s (status.storedVersions)", strings.Join(slices.DeleteFunc(slices.Clone(crd.Status.StoredVersions), func(v string) bool { return v == d.storage }), ", "))
		}
		lines = append(lines, fmt.Sprintf("the garbage collector and the namespace controller delete %s through %s and %s: deleting an object stored at another version decodes it through the webhook, so deletions that cascade through owner references stall for those objects and namespaces holding %s stay Terminating (NamespaceDeletionContentFailure); their lists, and the quota controller's counts, come from the API server's watch cache and go on (follows from the CRD's versions)", resource, preferred, why, crd.Spec.Names.Plural))
	} else if preferred != "" {
		lines = append(lines, fmt.Sprintf("the garbage collector and the namespace controller list and delete %s through %s, the storage version, and every object is stored at it: they need no conversion and are not held up (follows from the CRD's versions)", resource, preferred))
	}
	var others []string
	for _, v := range d.served {
		if v != d.storage {
			others = append(others, v)
		}
	}
	if len(others) > 0 {
		lines = append(lines, fmt.Sprintf("every client reading or writing %s through %s (controllers, GitOps tools such as Argo CD or Flux applying manifests at that version, kubectl get %s.%s.%s) fails, as does every write of an object through any version other than %s (follows from the CRD's versions)",
			resource, strings.Join(others, ", "), crd.Spec.Names.Plural, others[0], crd.Spec.Group, d.storage))
	}
	// Observed: namespaces whose deletion reports the resource.
	ctx, cancel := d.step("the API server: list Namespaces (for stalled deletions)", 10*time.Second)
	defer cancel()
	if nss, err := d.c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		for _, ns := range nss.Items {
			if ns.Status.Phase != corev1.NamespaceTerminating {
				continue
			}
			for _, c := range ns.Status.Conditions {
				if c.Status == corev1.ConditionTrue && (strings.Contains(c.Message, crd.Spec.Group) || strings.Contains(c.Message, resource)) {
					lines = append(lines, fmt.Sprintf("namespace %s is Terminating and its deletion reports %s: %s (observed)", ns.Name, c.Type, c.Message))
					break
				}
			}
		}
	}
	return lines
}

// preferredVersion is the version discovery prefers among the served
// ones: Kubernetes' version priority (v2 > v1 > v1beta2 > v1alpha1 >
// others).
func preferredVersion(served []string) string {
	if len(served) == 0 {
		return ""
	}
	vs := slices.Clone(served)
	sort.SliceStable(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
	return vs[0]
}
