package doctor

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkService runs the Service and EndpointSlice stages; false when the
// API server cannot reach any endpoint, so later stages would only repeat
// the cause.
func (d *diagnosis) checkService() bool {
	ctx, cancel := d.step(fmt.Sprintf("the API server: get Service %s/%s", d.svcNS, d.svcName), 10*time.Second)
	svc, err := d.c.Kube.CoreV1().Services(d.svcNS).Get(ctx, d.svcName, metav1.GetOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		d.add(d.serviceNotFound())
		d.skipThrough(CheckServicePort, CheckLatency, "no Service")
		return false
	}
	if err != nil {
		msg := "get Service: " + err.Error()
		if t := d.timedOut(ctx, "the API server to return the Service"); t != "" {
			msg = t
		}
		d.add(Finding{Check: CheckService, Severity: SeverityError, Message: msg, Explanation: explained(err.Error())})
		d.skipThrough(CheckServicePort, CheckLatency, "the Service could not be read")
		return false
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		d.add(Finding{Check: CheckService, Severity: SeverityError, Message: fmt.Sprintf("Service %s/%s is of type ExternalName (%s)", d.svcNS, d.svcName, svc.Spec.ExternalName),
			Cause: "the API server routes conversions only to ClusterIP, NodePort and LoadBalancer Services (unsupported service type \"ExternalName\")",
			Fix:   "replace it with a ClusterIP Service selecting the webhook pods, or use clientConfig.url"})
		d.skipThrough(CheckServicePort, CheckLatency, "ExternalName Service")
		return false
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		d.add(Finding{Check: CheckService, Severity: SeverityWarning, Message: fmt.Sprintf("Service %s/%s is headless (clusterIP: None)", d.svcNS, d.svcName),
			Cause: "an API server without --enable-aggregator-routing routes to the ClusterIP and fails: cannot route to service with ClusterIP \"None\"",
			Fix:   "recreate the Service without clusterIP: None"})
	default:
		d.ok(CheckService, "Service %s/%s, type %s, selector %s", d.svcNS, d.svcName, orDefault(string(svc.Spec.Type), "ClusterIP"), selectorString(svc.Spec.Selector))
	}

	var sp *corev1.ServicePort
	var ports []string
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		ports = append(ports, strconv.Itoa(int(p.Port)))
		if p.Port == d.port {
			sp = p
		}
	}
	if sp == nil {
		f := Finding{Check: CheckServicePort, Severity: SeverityError,
			Message: fmt.Sprintf("Service %s/%s has no port %d (its ports: %s)", d.svcNS, d.svcName, d.port, strings.Join(ports, ", ")),
			Cause:   fmt.Sprintf("clientConfig.service.port is %d; the API server fails: no service port %d found for service %q", d.port, d.port, d.svcName),
			Fix:     fmt.Sprintf("add port %d to the Service, or set clientConfig.service.port to the Service's port", d.port)}
		if len(svc.Spec.Ports) == 1 {
			f.Fix = d.patch("/spec/conversion/webhook/clientConfig/service/port", ports[0])
		}
		d.add(f)
		d.skipThrough(CheckEndpoints, CheckLatency, "no such Service port")
		return false
	}
	target := sp.TargetPort
	if target.Type == intstr.Int && target.IntVal == 0 {
		target = intstr.FromInt32(sp.Port)
	}
	portFinding := d.add(Finding{Check: CheckServicePort, Severity: SeverityOK,
		Message: fmt.Sprintf("port %d (name %q) -> targetPort %s", sp.Port, sp.Name, target.String())})
	pods := d.selectedPods(svc)
	if len(pods) > 0 {
		d.checkContainerPort(portFinding, pods, target)
	}
	return d.checkEndpoints(svc, sp, target, pods)
}

// checkContainerPort holds the Service's targetPort against the ports the
// selected pods declare.
func (d *diagnosis) checkContainerPort(f *Finding, pods []corev1.Pod, target intstr.IntOrString) {
	var declared []string
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if (target.Type == intstr.String && cp.Name == target.StrVal) || (target.Type == intstr.Int && cp.ContainerPort == target.IntVal) {
					f.Message += fmt.Sprintf(", container %s/%s port %d", p.Name, c.Name, cp.ContainerPort)
					return
				}
				declared = append(declared, fmt.Sprintf("%s/%d", orDefault(cp.Name, "-"), cp.ContainerPort))
			}
		}
	}
	sort.Strings(declared)
	f.Severity = SeverityError
	f.Message += fmt.Sprintf(": no container of the selected pods declares port %s (declared: %s)", target.String(), orDefault(strings.Join(declared, ", "), "none"))
	f.Cause = "the Service forwards to a port nothing listens on: connections are refused"
	if target.Type == intstr.Int {
		f.Severity = SeverityWarning
		f.Cause = "containerPort is informational; if the webhook listens elsewhere, connections are refused"
	}
	f.Fix = fmt.Sprintf(`kubectl patch svc -n %s %s --type=json -p '[{"op":"replace","path":"/spec/ports/0/targetPort","value":CONTAINER-PORT}]'   # the port the webhook's --addr listens on`, d.svcNS, d.svcName)
}

func (d *diagnosis) selectedPods(svc *corev1.Service) []corev1.Pod {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	ctx, cancel := d.step("the API server: list the pods of Service "+d.svcNS+"/"+d.svcName, 10*time.Second)
	defer cancel()
	list, err := d.c.Kube.CoreV1().Pods(d.svcNS).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return nil
	}
	return list.Items
}

func (d *diagnosis) checkEndpoints(svc *corev1.Service, sp *corev1.ServicePort, target intstr.IntOrString, pods []corev1.Pod) bool {
	ctx, cancel := d.step("the API server: list the EndpointSlices of Service "+d.svcNS+"/"+d.svcName, 10*time.Second)
	list, err := d.c.Kube.DiscoveryV1().EndpointSlices(d.svcNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + d.svcName})
	cancel()
	if err != nil {
		d.add(Finding{Check: CheckEndpoints, Severity: SeverityError, Message: "list EndpointSlices: " + err.Error()})
		d.skipThrough(CheckEndpointsReady, CheckLatency, "EndpointSlices could not be read")
		return false
	}
	var otherPorts []string
	for _, s := range list.Items {
		for _, p := range s.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if p.Port == nil {
				continue
			}
			if name != sp.Name {
				otherPorts = append(otherPorts, fmt.Sprintf("%q", name))
				continue
			}
			for _, e := range s.Endpoints {
				if len(e.Addresses) == 0 {
					continue
				}
				ep := Endpoint{Address: net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port))), Ready: e.Conditions.Ready == nil || *e.Conditions.Ready}
				if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
					ep.Pod = e.TargetRef.Name
				}
				d.endpoints = append(d.endpoints, ep)
			}
		}
	}
	if len(d.endpoints) == 0 {
		f := Finding{Check: CheckEndpoints, Severity: SeverityError,
			Message: fmt.Sprintf("no endpoint of Service %s/%s for port %q (%d EndpointSlices)", d.svcNS, d.svcName, sp.Name, len(list.Items)),
			Cause:   "the API server has nowhere to send reviews: no endpoints available for service \"" + d.svcName + "\""}
		switch {
		case len(otherPorts) > 0:
			f.Cause += fmt.Sprintf("; the EndpointSlices serve port names %s, not the Service port's %q", strings.Join(otherPorts, ", "), sp.Name)
			f.Fix = "give the Service port and the EndpointSlice port the same name"
		case len(svc.Spec.Selector) == 0:
			if len(list.Items) == 0 {
				f.Cause += "; the Service has no selector and no EndpointSlice names it (label " + discoveryv1.LabelServiceName + "=" + d.svcName + ")"
			} else {
				f.Cause += "; the Service has no selector, and its EndpointSlices (written by hand or by a controller) list no endpoint"
			}
			f.Fix = "give the Service a selector matching the webhook pods' labels (or have the controller that writes its EndpointSlices add the webhook's endpoints)"
		case len(pods) == 0:
			f.Cause += fmt.Sprintf("; its selector %s matches no pod", selectorString(svc.Spec.Selector))
			f.Fix = fmt.Sprintf("kubectl get pods -n %s --show-labels   # then fix the Service's selector or the Deployment's pod labels", d.svcNS)
		default:
			f.Cause += fmt.Sprintf("; %d pods match the selector but none is an endpoint yet", len(pods))
			f.Fix = fmt.Sprintf("kubectl describe pods -n %s -l %s", d.svcNS, selectorString(svc.Spec.Selector))
		}
		d.add(f)
		d.skipThrough(CheckEndpointsReady, CheckLatency, "no endpoints")
		return false
	}
	var ready, notReady []string
	// Ready ones first: the API server sends reviews to those.
	sort.SliceStable(d.endpoints, func(i, j int) bool { return d.endpoints[i].Ready && !d.endpoints[j].Ready })
	for _, e := range d.endpoints {
		if e.Ready {
			ready = append(ready, e.String())
		} else {
			notReady = append(notReady, e.Address)
		}
	}
	var all []string
	for _, e := range d.endpoints {
		all = append(all, e.String())
	}
	d.ok(CheckEndpoints, "%d endpoints for port %q: %s", len(d.endpoints), sp.Name, strings.Join(all, ", "))
	switch {
	case len(ready) == 0:
		d.add(Finding{Check: CheckEndpointsReady, Severity: SeverityError,
			Message: fmt.Sprintf("none of the %d endpoints is ready (%s)", len(notReady), strings.Join(notReady, ", ")),
			Cause:   "the API server sends no review to a not-ready endpoint: no endpoints available for service \"" + d.svcName + "\"; the webhook pods fail their readiness probe (/readyz), or are starting or terminating",
			Fix:     fmt.Sprintf("kubectl describe pods -n %s -l %s; kubectl logs -n %s -l %s   # why /readyz fails", d.svcNS, selectorString(svc.Spec.Selector), d.svcNS, selectorString(svc.Spec.Selector))})
	case len(notReady) > 0:
		d.add(Finding{Check: CheckEndpointsReady, Severity: SeverityWarning,
			Message: fmt.Sprintf("%d of %d endpoints ready; not ready: %s", len(ready), len(d.endpoints), strings.Join(notReady, ", ")),
			Cause:   "fewer replicas answer than deployed: less headroom, a rollout or a failing pod"})
	default:
		d.ok(CheckEndpointsReady, "%d of %d endpoints ready", len(ready), len(d.endpoints))
	}
	return true
}

// serviceNotFound says where the Service is instead: its namespace does
// not exist, a Service of that name lives in another namespace, or one of
// a close name lives in the same one; with the field to fix.
func (d *diagnosis) serviceNotFound() Finding {
	f := Finding{Check: CheckService, Severity: SeverityError,
		Message: fmt.Sprintf("Service %s/%s, named in clientConfig.service, does not exist", d.svcNS, d.svcName),
		Cause:   "the API server cannot resolve the webhook: every conversion fails with service \"" + d.svcName + "\" not found",
		Fix:     fmt.Sprintf("create the Service, or point clientConfig at the existing one: %s", d.patch("/spec/conversion/webhook/clientConfig/service/name", `"SERVICE"`))}
	nsMissing := false
	ctx, cancel := d.step("the API server: get Namespace "+d.svcNS, 10*time.Second)
	if _, err := d.c.Kube.CoreV1().Namespaces().Get(ctx, d.svcNS, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		nsMissing = true
		f.Message = fmt.Sprintf("the namespace %s of Service %s/%s, named in clientConfig.service.namespace, does not exist", d.svcNS, d.svcNS, d.svcName)
	}
	cancel()
	// The same name in other namespaces.
	var elsewhere []string
	ctx, cancel = d.step("the API server: list Services named "+d.svcName, 10*time.Second)
	if list, err := d.c.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + d.svcName}); err == nil {
		for _, s := range list.Items {
			if s.Name == d.svcName && s.Namespace != d.svcNS {
				elsewhere = append(elsewhere, s.Namespace)
			}
		}
	}
	cancel()
	sort.Strings(elsewhere)
	switch {
	case len(elsewhere) == 1:
		f.Cause += fmt.Sprintf("; Service %s exists in namespace %s: clientConfig.service.namespace names %s", d.svcName, elsewhere[0], d.svcNS)
		f.Fix = d.patch("/spec/conversion/webhook/clientConfig/service/namespace", strconv.Quote(elsewhere[0]))
	case len(elsewhere) > 1:
		f.Cause += fmt.Sprintf("; Services named %s exist in namespaces %s: clientConfig.service.namespace names %s", d.svcName, strings.Join(elsewhere, ", "), d.svcNS)
		f.Fix = d.patch("/spec/conversion/webhook/clientConfig/service/namespace", `"NAMESPACE"`) + "   # the namespace of the webhook's Service"
	case nsMissing:
		f.Cause += "; no Service of that name exists in any namespace: the webhook is deployed under another name, or not at all"
		f.Fix = fmt.Sprintf("kubectl get svc -A | grep -i webhook   # then fix clientConfig.service (namespace and name): %s", d.patch("/spec/conversion/webhook/clientConfig/service", fmt.Sprintf(`{"namespace":"NAMESPACE","name":%q,"port":%d,"path":%q}`, d.svcName, d.port, d.path)))
	default:
		if cand := d.similarService(); cand != "" {
			f.Cause += fmt.Sprintf("; Service %s/%s exists and looks like the one meant", d.svcNS, cand)
			f.Fix = d.patch("/spec/conversion/webhook/clientConfig/service/name", strconv.Quote(cand))
		}
	}
	return f
}

// similarService finds a Service in the namespace whose name is close to
// the one configured (an edit distance of at most 3), or the only one
// whose name says webhook.
func (d *diagnosis) similarService() string {
	ctx, cancel := d.step("the API server: list the Services of namespace "+d.svcNS, 10*time.Second)
	defer cancel()
	list, err := d.c.Kube.CoreV1().Services(d.svcNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	best, bestDist := "", 4
	var webhooks []string
	for _, s := range list.Items {
		if dist := editDistance(s.Name, d.svcName); dist < bestDist {
			best, bestDist = s.Name, dist
		}
		if strings.Contains(s.Name, "webhook") || strings.Contains(s.Name, "conversion") {
			webhooks = append(webhooks, s.Name)
		}
	}
	if best == "" && len(webhooks) == 1 {
		best = webhooks[0]
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func selectorString(sel map[string]string) string {
	if len(sel) == 0 {
		return "(none)"
	}
	return labels.SelectorFromSet(sel).String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
