package deploy_test

import (
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestEveryDeploymentHasOneDisruptionBudget checks a node drain can never
// take every replica of a service at once, nor be blocked for ever.
func TestEveryDeploymentHasOneDisruptionBudget(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, d := range all[*appsv1.Deployment](r) {
			var budgets []*policyv1.PodDisruptionBudget
			for _, pdb := range all[*policyv1.PodDisruptionBudget](r) {
				if selects(t, pdb.Spec.Selector, d.Spec.Template.Labels) {
					budgets = append(budgets, pdb)
				}
			}
			if len(budgets) != 1 {
				t.Errorf("Deployment %s is selected by %d PodDisruptionBudgets, want 1", d.Name, len(budgets))
				continue
			}
			pdb := budgets[0]
			if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
				t.Errorf("PodDisruptionBudget %s sets neither maxUnavailable nor minAvailable", pdb.Name)
			}
			if pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() >= replicasFloor(r, d) {
				t.Errorf("PodDisruptionBudget %s: minAvailable %s blocks every drain of %s", pdb.Name, pdb.Spec.MinAvailable.String(), d.Name)
			}
		}
	})
}

// TestRelayShardsSpreadOverReplicas checks the relay's replicas against its
// shards: at least two replicas, so one takes over a dead one's shards, and
// at least as many shards per outbox as replicas, so none only waits. A
// fixed count: an autoscaler resizing it would move shards back and forth.
func TestRelayShardsSpreadOverReplicas(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		d := named[*appsv1.Deployment](r, "relay")
		if d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Fatalf("relay replicas %v, want at least 2", replicasOf(d))
		}
		if autoscaled(r, "relay") {
			t.Error("relay is autoscaled; it wants a fixed replica count")
		}
		c := onlyContainer(t, "relay", d.Spec.Template.Spec)
		v, _ := envValue(t, r, c, "RELAY_SHARDS")
		shards, err := strconv.Atoi(v)
		if err != nil || shards < int(*d.Spec.Replicas) {
			t.Errorf("RELAY_SHARDS = %q for %d replicas, want a number at least the replicas", v, *d.Spec.Replicas)
		}
	})
}

// TestIngestScalesOnCPU checks the ingest HorizontalPodAutoscaler and that
// the Deployment leaves it the replica count.
func TestIngestScalesOnCPU(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		hpa := named[*autoscalingv2.HorizontalPodAutoscaler](r, "ingest")
		if hpa == nil {
			t.Fatal("no HorizontalPodAutoscaler ingest")
		}
		ref := hpa.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || named[*appsv1.Deployment](r, ref.Name) == nil || ref.Name != "ingest" {
			t.Errorf("HPA targets %s %s/%s, want the rendered Deployment ingest", ref.APIVersion, ref.Kind, ref.Name)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 1 || *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
			t.Errorf("HPA replicas %v..%d, want 1 <= min <= max", deref(hpa.Spec.MinReplicas), hpa.Spec.MaxReplicas)
		}
		if r.overlay == "production" && *hpa.Spec.MinReplicas < 2 {
			t.Errorf("production ingest may shrink to %d replica: want at least 2", *hpa.Spec.MinReplicas)
		}
		if len(hpa.Spec.Metrics) == 0 || hpa.Spec.Metrics[0].Resource == nil || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
			t.Errorf("HPA metrics %+v, want CPU utilization", hpa.Spec.Metrics)
		}
		checkNoFixedReplicas(t, r, "ingest")
	})
}

// TestInvoicerScalesOnBillingQueueDepth checks production's KEDA
// ScaledObject: aws-sqs-queue on onceflow-billing, through a rendered
// TriggerAuthentication, targeting the invoicer Deployment. Local has no KEDA
// and a fixed replica count.
func TestInvoicerScalesOnBillingQueueDepth(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		so := custom(r, "ScaledObject", "invoicer")
		if r.overlay == "local" {
			if so != nil {
				t.Error("local renders a KEDA ScaledObject; KEDA is production only")
			}
			if d := named[*appsv1.Deployment](r, "invoicer"); d == nil || d.Spec.Replicas == nil {
				t.Error("local invoicer has no replica count")
			}
			return
		}
		if so == nil {
			t.Fatal("no ScaledObject invoicer")
		}
		if target := str(t, so, "spec", "scaleTargetRef", "name"); target != "invoicer" || named[*appsv1.Deployment](r, target) == nil {
			t.Errorf("ScaledObject targets %q, want the rendered Deployment invoicer", target)
		}
		triggers, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
		if len(triggers) != 1 {
			t.Fatalf("ScaledObject has %d triggers, want 1", len(triggers))
		}
		tr := &unstructured.Unstructured{Object: triggers[0].(map[string]any)}
		if typ := str(t, tr, "type"); typ != "aws-sqs-queue" {
			t.Errorf("trigger type %q, want aws-sqs-queue", typ)
		}
		if q := str(t, tr, "metadata", "queueURL"); !strings.HasPrefix(q, "https://sqs.") || !strings.HasSuffix(q, "/onceflow-billing") {
			t.Errorf("trigger queueURL %q, want the onceflow-billing queue's SQS URL", q)
		}
		if auth := str(t, tr, "authenticationRef", "name"); custom(r, "TriggerAuthentication", auth) == nil {
			t.Errorf("trigger authenticates with %q, which is not rendered", auth)
		}
		checkNoFixedReplicas(t, r, "invoicer")
	})
}

// checkNoFixedReplicas fails when an autoscaled Deployment also fixes its
// replica count, which every apply would reset.
func checkNoFixedReplicas(t *testing.T, r rendered, name string) {
	t.Helper()
	if d := named[*appsv1.Deployment](r, name); d != nil && d.Spec.Replicas != nil {
		t.Errorf("Deployment %s is autoscaled but sets replicas %d", name, *d.Spec.Replicas)
	}
}

// autoscaled reports whether an HPA or a ScaledObject targets Deployment name.
func autoscaled(r rendered, name string) bool {
	for _, h := range all[*autoscalingv2.HorizontalPodAutoscaler](r) {
		if h.Spec.ScaleTargetRef.Name == name {
			return true
		}
	}
	for _, u := range r.custom {
		if target, _, _ := unstructured.NestedString(u.Object, "spec", "scaleTargetRef", "name"); u.GetKind() == "ScaledObject" && target == name {
			return true
		}
	}
	return false
}

// replicasFloor is the fewest replicas a Deployment runs.
func replicasFloor(r rendered, d *appsv1.Deployment) int {
	if h := named[*autoscalingv2.HorizontalPodAutoscaler](r, d.Name); h != nil && h.Spec.MinReplicas != nil {
		return int(*h.Spec.MinReplicas)
	}
	if d.Spec.Replicas != nil {
		return int(*d.Spec.Replicas)
	}
	return 1
}

func replicasOf(d *appsv1.Deployment) any {
	if d == nil {
		return "no Deployment"
	}
	return deref(d.Spec.Replicas)
}

func custom(r rendered, kind, name string) *unstructured.Unstructured {
	for _, u := range r.custom {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

func str(tb testing.TB, u *unstructured.Unstructured, fields ...string) string {
	tb.Helper()
	v, _, err := unstructured.NestedString(u.Object, fields...)
	if err != nil {
		tb.Errorf("%s: %v", strings.Join(fields, "."), err)
	}
	return v
}

// selects reports whether selector matches a pod with podLabels; an empty
// or invalid selector fails the test, since it would match everything or
// nothing.
func selects(tb testing.TB, selector *metav1.LabelSelector, podLabels map[string]string) bool {
	tb.Helper()
	if selector == nil || (len(selector.MatchLabels) == 0 && len(selector.MatchExpressions) == 0) {
		tb.Errorf("empty label selector")
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		tb.Errorf("label selector %v: %v", selector, err)
		return false
	}
	return s.Matches(labels.Set(podLabels))
}
