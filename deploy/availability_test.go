package deploy_test

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hubspoke/hubspoke/deploy"
)

// selects reports whether sel selects a pod with the given labels.
func selects(t *testing.T, sel *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(labels.Set(podLabels))
}

// TestDisruptionBudget asserts what the PodDisruptionBudget means, for
// every replica count: it covers exactly the webhook's pods, and with all
// of them healthy it lets a node drain evict one pod at a time, never
// more, and never blocks on a pod that is not ready.
func TestDisruptionBudget(t *testing.T) {
	for _, replicas := range []int32{2, 3, 5} {
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			out := render(t, deploy.Options{Replicas: replicas, Name: "wh", Namespace: "conv"})
			dep := find[appsv1.Deployment](t, out, "Deployment", "wh")
			pdb := find[policyv1.PodDisruptionBudget](t, out, "PodDisruptionBudget", "wh")
			if pdb.Namespace != dep.Namespace {
				t.Errorf("the budget is in namespace %q, the pods in %q", pdb.Namespace, dep.Namespace)
			}
			if !selects(t, pdb.Spec.Selector, dep.Spec.Template.Labels) {
				t.Errorf("the budget's selector %v does not select the pods %v", pdb.Spec.Selector, dep.Spec.Template.Labels)
			}
			// Another webhook deployed next to it keeps its own budget.
			other := find[appsv1.Deployment](t, render(t, deploy.Options{Replicas: replicas, Name: "other", Namespace: "conv"}), "Deployment", "other")
			if selects(t, pdb.Spec.Selector, other.Spec.Template.Labels) {
				t.Errorf("the budget also selects the pods of another deployment: %v", other.Spec.Template.Labels)
			}
			// The disruptions allowed with every pod healthy, as the
			// disruption controller computes them.
			var healthyWanted int
			switch {
			case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MinAvailable == nil:
				maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(replicas), true)
				if err != nil {
					t.Fatal(err)
				}
				healthyWanted = int(replicas) - maxUnavailable
			case pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable == nil:
				minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(replicas), true)
				if err != nil {
					t.Fatal(err)
				}
				healthyWanted = minAvailable
			default:
				t.Fatalf("the budget sets neither or both of minAvailable and maxUnavailable: %+v", pdb.Spec)
			}
			if allowed := int(replicas) - healthyWanted; allowed != 1 {
				t.Errorf("with %d healthy pods the budget allows %d evictions at a time, want 1 (a drain proceeds and keeps all but one serving)", replicas, allowed)
			}
			if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
				t.Errorf("unhealthyPodEvictionPolicy %v: a crash-looping pod would block node drains", p)
			}
		})
	}
}

// TestTopologySpread asserts what the spread constraints mean: the pods
// spread over nodes and over zones, each rollout's pods on their own, and
// a cluster of one node or one zone still runs every replica.
func TestTopologySpread(t *testing.T) {
	out := render(t, deploy.Options{Name: "wh", Namespace: "conv"})
	dep := find[appsv1.Deployment](t, out, "Deployment", "wh")
	pod := dep.Spec.Template
	var keys []string
	for _, c := range pod.Spec.TopologySpreadConstraints {
		keys = append(keys, c.TopologyKey)
		if !selects(t, c.LabelSelector, pod.Labels) {
			t.Errorf("%s: the selector %v does not count the webhook's own pods %v", c.TopologyKey, c.LabelSelector, pod.Labels)
		}
		if c.MaxSkew != 1 {
			t.Errorf("%s: maxSkew %d, want 1 (no domain holds two pods more than another)", c.TopologyKey, c.MaxSkew)
		}
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			t.Errorf("%s: whenUnsatisfiable %s: a single-node or single-zone cluster could not run every replica", c.TopologyKey, c.WhenUnsatisfiable)
		}
		if !slices.Contains(c.MatchLabelKeys, appsv1.DefaultDeploymentUniqueLabelKey) {
			t.Errorf("%s: matchLabelKeys %v lack %s: a rollout's new pods would be counted with the old", c.TopologyKey, c.MatchLabelKeys, appsv1.DefaultDeploymentUniqueLabelKey)
		}
	}
	for _, want := range []string{corev1.LabelHostname, corev1.LabelTopologyZone} {
		if !slices.Contains(keys, want) {
			t.Errorf("no spread over %s (constraints over %v)", want, keys)
		}
	}
	// Pods of another deployment are not counted in this one's spread.
	other := find[appsv1.Deployment](t, render(t, deploy.Options{Name: "other", Namespace: "conv"}), "Deployment", "other")
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if selects(t, c.LabelSelector, other.Spec.Template.Labels) {
			t.Errorf("%s: the spread counts the pods of another deployment", c.TopologyKey)
		}
	}
}
