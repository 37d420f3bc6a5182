package deploy_test

import (
	"net"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// productionEgress is, per workload, the production egress policies
// (overlays/production/egress.yaml) that must apply to its pods, and no
// others: DNS and the database for all; SQS and STS endpoints for the
// services; the PSP for ingest; the fiscal provider for the invoicer and the
// reconciler.
var productionEgress = map[string][]string{
	"ingest":     {"egress-aws-endpoints", "egress-database", "egress-dns", "egress-psp"},
	"relay":      {"egress-aws-endpoints", "egress-database", "egress-dns"},
	"invoicer":   {"egress-aws-endpoints", "egress-database", "egress-dns", "egress-fiscal-provider"},
	"reconciler": {"egress-aws-endpoints", "egress-database", "egress-dns", "egress-fiscal-provider", "reconciler-egress"},
	"migrate":    {"egress-database", "egress-dns"},
	"console":    {"console-egress", "egress-aws-endpoints", "egress-dns", "egress-oidc"},
}

// onceflowServices are the pods the console may reach by selector: the
// services whose admin APIs it calls, in its own namespace.
var onceflowServices = []string{"ingest", "invoicer", "reconciler", "relay"}

// wantEgressPorts is the ports workload may reach in overlay.
func wantEgressPorts(overlay, workload string) []string {
	if overlay != "production" {
		return allowedEgress
	}
	ports := []string{"TCP/53", "UDP/53"}
	if slices.Contains(productionEgress[workload], "egress-database") {
		ports = append(ports, "TCP/5432")
	}
	if slices.Contains(productionEgress[workload], "egress-aws-endpoints") {
		ports = append(ports, "TCP/443")
	}
	return slices.Sorted(slices.Values(ports))
}

// TestProductionEgressNamesEveryDestination checks that in production no
// egress rule is open to any address: each names its destination, DNS by
// the cluster's DNS pods and everything else by a CIDR narrower than the
// whole internet (set from the onceflow-egress values), and each workload
// gets exactly the destinations it calls.
func TestProductionEgressNamesEveryDestination(t *testing.T) {
	t.Parallel()
	r := render(t, "production")
	for _, w := range workloads(r) {
		var names []string
		for _, np := range all[*networkingv1.NetworkPolicy](r) {
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !policySelects(np, w.pod.Labels) {
				continue
			}
			names = append(names, np.Name)
			for _, rule := range np.Spec.Egress {
				checkDestination(t, w, np.Name, rule)
			}
		}
		slices.Sort(names)
		if want := productionEgress[w.name]; !slices.Equal(names, want) {
			t.Errorf("%s: egress policies %v, want %v", w, names, want)
		}
	}
}

// checkDestination fails a rule without a destination, with an ipBlock that
// is not a CIDR or opens the whole internet, or with a selector other than
// the cluster's DNS pods.
func checkDestination(t *testing.T, w workload, policy string, rule networkingv1.NetworkPolicyEgressRule) {
	t.Helper()
	if len(rule.To) == 0 {
		t.Errorf("%s: %s allows any destination", w, policy)
	}
	for _, to := range rule.To {
		switch {
		case to.IPBlock != nil:
			_, n, err := net.ParseCIDR(to.IPBlock.CIDR)
			if err != nil {
				t.Errorf("%s: %s: ipBlock %q is not a CIDR (is onceflow-egress set?)", w, policy, to.IPBlock.CIDR)
				continue
			}
			if ones, _ := n.Mask.Size(); ones < 8 {
				t.Errorf("%s: %s: ipBlock %s opens too much of the internet", w, policy, to.IPBlock.CIDR)
			}
		case to.PodSelector != nil && to.NamespaceSelector != nil:
			if to.PodSelector.MatchLabels["k8s-app"] != "kube-dns" ||
				to.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kube-system" {
				t.Errorf("%s: %s reaches pods %v, want only the cluster's DNS", w, policy, to.PodSelector.MatchLabels)
			}
		case to.PodSelector != nil && w.name == "console":
			checkServicePods(t, w, policy, to.PodSelector.MatchExpressions)
		case to.PodSelector != nil && w.name == reconcilerName:
			if len(to.PodSelector.MatchExpressions) != 0 || len(to.PodSelector.MatchLabels) != 1 ||
				to.PodSelector.MatchLabels["app.kubernetes.io/name"] != "ingest" {
				t.Errorf("%s: %s reaches pods %v, want only ingest's", w, policy, to.PodSelector)
			}
		default:
			t.Errorf("%s: %s: destination %+v names neither a CIDR nor the DNS pods", w, policy, to)
		}
	}
}

// checkServicePods fails a console destination that selects anything but the
// four services' pods by name.
func checkServicePods(t *testing.T, w workload, policy string, exprs []metav1.LabelSelectorRequirement) {
	t.Helper()
	if len(exprs) != 1 || exprs[0].Key != "app.kubernetes.io/name" || exprs[0].Operator != metav1.LabelSelectorOpIn ||
		!slices.Equal(slices.Sorted(slices.Values(exprs[0].Values)), onceflowServices) {
		t.Errorf("%s: %s reaches pods %v, want only %v", w, policy, exprs, onceflowServices)
	}
}
