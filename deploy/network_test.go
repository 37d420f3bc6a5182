package deploy_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// allowedEgress is every port a onceflow pod may reach locally: DNS,
// PostgreSQL, HTTPS, LocalStack and the two sandboxes. Production is
// narrower, per workload and destination (egress_test.go).
var allowedEgress = []string{"TCP/443", "TCP/4566", "TCP/53", "TCP/5432", "TCP/8091", "TCP/8092", "UDP/53"}

// metricsNamespace is where Prometheus runs.
const metricsNamespace = "monitoring"

// consoleName is the console's app.kubernetes.io/name: its pods call the
// services' admin APIs.
const consoleName = "console"

// consoleEgress is what the console may reach beyond every pod's egress:
// the services' admin port. The reconciler may reach it too, ingest's only
// (reconcilerName).
const consoleEgress = "TCP/9090"

// reconcilerName is the reconciler's app.kubernetes.io/name: its pods call
// ingest's admin API (the sweep's republish, the PSP audit), and no other.
const reconcilerName = "reconciler"

// publicWorkloads are the workloads anyone may connect to, on their public
// port (http) only: ingest (webhooks, the API) and the console (people,
// each request signed in).
var publicWorkloads = []string{"ingest", consoleName}

// TestNetworkPolicyIngress checks who may connect to each pod: anyone to
// ingest's and the console's public port (http) and to nothing else; only
// the monitoring namespace and the console's pods to every service's admin
// port (only the monitoring namespace to the console's own), and the
// reconciler's pods to ingest's; nobody to the migration pod.
func TestNetworkPolicyIngress(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, w := range workloads(r) {
			rules, isolated := rulesFor(r, w, networkingv1.PolicyTypeIngress)
			if !isolated {
				t.Errorf("%s: no NetworkPolicy isolates its ingress", w)
				continue
			}
			c := onlyContainer(t, w.name, w.pod.Spec)
			reach := map[string]map[string]bool{} // peer ("anyone", "monitoring", "console") → ports
			for _, rule := range rules.ingress {
				checkRulePorts(t, w, c, rule.Ports)
				for _, peer := range peersOf(t, w, rule.From) {
					for _, p := range rule.Ports {
						if reach[peer] == nil {
							reach[peer] = map[string]bool{}
						}
						reach[peer][p.Port.String()] = true
					}
				}
			}
			checkIngressShape(t, w, reach)
		}
	})
}

// peersOf names each peer of a rule: "anyone" for a rule without peers,
// "monitoring" for exactly the monitoring namespace, "console" for the
// console's pods and "reconciler" for the reconciler's, in onceflow's own
// namespace; anything else fails.
func peersOf(t *testing.T, w workload, from []networkingv1.NetworkPolicyPeer) []string {
	t.Helper()
	if len(from) == 0 {
		return []string{"anyone"}
	}
	var out []string
	for _, p := range from {
		switch {
		case allFromNamespace([]networkingv1.NetworkPolicyPeer{p}, metricsNamespace):
			out = append(out, "monitoring")
		case isPods(p, consoleName):
			out = append(out, "console")
		case isPods(p, reconcilerName):
			out = append(out, "reconciler")
		default:
			t.Errorf("%s: accepts traffic from %+v, want only the %s namespace, the console or the reconciler", w, p, metricsNamespace)
		}
	}
	return out
}

// isPods reports whether the peer is exactly the pods named name of the
// policy's own namespace.
func isPods(p networkingv1.NetworkPolicyPeer, name string) bool {
	if p.PodSelector == nil || p.NamespaceSelector != nil || p.IPBlock != nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(p.PodSelector)
	if err != nil || !s.Matches(labels.Set{"app.kubernetes.io/name": name}) {
		return false
	}
	for _, other := range []string{"ingest", "relay", "invoicer", "reconciler", consoleName} {
		if other != name && s.Matches(labels.Set{"app.kubernetes.io/name": other}) {
			return false
		}
	}
	return true
}

// checkIngressShape wants: anyone reaches ingest's http port only; every
// Deployment's admin port is reached by the monitoring namespace and the
// console, ingest's also by the reconciler, and by no one else; nothing
// reaches a Job's pod.
func checkIngressShape(t *testing.T, w workload, reach map[string]map[string]bool) {
	t.Helper()
	anyone := slices.Sorted(maps.Keys(reach["anyone"]))
	switch {
	case slices.Contains(publicWorkloads, w.name) && !slices.Equal(anyone, []string{"http"}):
		t.Errorf("%s: anyone reaches ports %v, want exactly its public port http", w, anyone)
	case !slices.Contains(publicWorkloads, w.name) && len(anyone) > 0:
		t.Errorf("%s: accepts traffic from anywhere on %v; only %v should", w, anyone, publicWorkloads)
	}
	if w.kind != "Deployment" {
		if len(reach) > 0 {
			t.Errorf("%s: reachable by %v, want by nobody", w, reach)
		}
		return
	}
	peers := []string{"monitoring", "console"}
	if w.name == "ingest" {
		peers = append(peers, "reconciler")
	} else if len(reach["reconciler"]) > 0 {
		t.Errorf("%s: reachable by the reconciler's pods on %v, want only ingest's admin port", w, reach["reconciler"])
	}
	if w.name == consoleName {
		peers = []string{"monitoring"}
		if len(reach["console"]) > 0 {
			t.Errorf("%s: reachable by the console's own pods on %v", w, reach["console"])
		}
	}
	for _, peer := range peers {
		if got := slices.Sorted(maps.Keys(reach[peer])); !slices.Equal(got, []string{"admin"}) {
			t.Errorf("%s: %s reaches ports %v, want exactly the admin port", w, peer, got)
		}
	}
}

// checkRulePorts fails a rule that opens every port, or a port the
// container does not serve.
func checkRulePorts(t *testing.T, w workload, c corev1.Container, ports []networkingv1.NetworkPolicyPort) {
	t.Helper()
	if len(ports) == 0 {
		t.Errorf("%s: an ingress rule opens every port", w)
	}
	for _, p := range ports {
		if p.Port == nil || !hasPort(c, *p.Port) {
			t.Errorf("%s: ingress port %v is not one of its container ports", w, p.Port)
		}
	}
}

// TestNetworkPolicyEgress checks every pod may reach exactly the ports it
// needs: DNS, PostgreSQL and HTTPS where it calls out (plus the local
// neighbours in the local overlay).
func TestNetworkPolicyEgress(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, w := range workloads(r) {
			rules, isolated := rulesFor(r, w, networkingv1.PolicyTypeEgress)
			if !isolated {
				t.Errorf("%s: no NetworkPolicy limits its egress", w)
				continue
			}
			var ports []string
			for _, rule := range rules.egress {
				if len(rule.Ports) == 0 {
					t.Errorf("%s: an egress rule opens every port", w)
				}
				for _, p := range rule.Ports {
					ports = append(ports, portString(p))
				}
			}
			slices.Sort(ports)
			ports = slices.Compact(ports)
			want := wantEgressPorts(r.overlay, w.name)
			if w.name == consoleName || w.name == reconcilerName {
				want = slices.Sorted(slices.Values(append([]string{consoleEgress}, want...)))
			}
			if !slices.Equal(ports, want) {
				t.Errorf("%s: may reach %v, want %v", w, ports, want)
			}
		}
	})
}

// TestIngestServiceReachesItsPods checks the ingest Service selects the
// ingest pods on their HTTP port.
func TestIngestServiceReachesItsPods(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		svc := named[*corev1.Service](r, "ingest")
		if svc == nil {
			t.Fatal("no Service ingest")
		}
		var ingest *workload
		for _, w := range workloads(r) {
			if w.name == "ingest" {
				ingest = &w
			}
		}
		if ingest == nil || !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, ingest.pod.Labels) {
			t.Fatalf("Service ingest selector %v does not select the ingest pods", svc.Spec.Selector)
		}
		c := onlyContainer(t, "ingest", ingest.pod.Spec)
		for _, p := range svc.Spec.Ports {
			if !hasPort(c, p.TargetPort) {
				t.Errorf("Service ingest targets port %s, which the container does not serve", p.TargetPort.String())
			}
		}
	})
}

// policyRules are the rules of every NetworkPolicy that selects a pod.
type policyRules struct {
	ingress []networkingv1.NetworkPolicyIngressRule
	egress  []networkingv1.NetworkPolicyEgressRule
}

// rulesFor collects the rules of kind typ that apply to w's pods, and
// whether any policy isolates them for typ at all.
func rulesFor(r rendered, w workload, typ networkingv1.PolicyType) (policyRules, bool) {
	var out policyRules
	isolated := false
	for _, np := range all[*networkingv1.NetworkPolicy](r) {
		if !slices.Contains(np.Spec.PolicyTypes, typ) || !policySelects(np, w.pod.Labels) {
			continue
		}
		isolated = true
		out.ingress = append(out.ingress, np.Spec.Ingress...)
		out.egress = append(out.egress, np.Spec.Egress...)
	}
	return out, isolated
}

// policySelects applies a NetworkPolicy's podSelector, where empty means
// every pod of the namespace.
func policySelects(np *networkingv1.NetworkPolicy, podLabels map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	return err == nil && s.Matches(labels.Set(podLabels))
}

// allFromNamespace reports whether every peer is exactly the namespace ns.
func allFromNamespace(peers []networkingv1.NetworkPolicyPeer, ns string) bool {
	for _, p := range peers {
		if p.PodSelector != nil || p.IPBlock != nil || p.NamespaceSelector == nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
		if err != nil || s.Empty() || !s.Matches(labels.Set{"kubernetes.io/metadata.name": ns}) ||
			s.Matches(labels.Set{"kubernetes.io/metadata.name": ns + "-other"}) {
			return false
		}
	}
	return true
}

func portString(p networkingv1.NetworkPolicyPort) string {
	proto := corev1.ProtocolTCP
	if p.Protocol != nil {
		proto = *p.Protocol
	}
	if p.Port == nil {
		return fmt.Sprintf("%s/any", proto)
	}
	return fmt.Sprintf("%s/%s", proto, p.Port.String())
}

// fromConsole reports whether every peer is the console's pods in the
// same namespace.
func fromConsole(peers []networkingv1.NetworkPolicyPeer) bool {
	for _, p := range peers {
		if p.NamespaceSelector != nil || p.IPBlock != nil || p.PodSelector == nil ||
			p.PodSelector.MatchLabels["app.kubernetes.io/name"] != "console" {
			return false
		}
	}
	return len(peers) > 0
}
