package deploy_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// In production a ServiceMonitor scrapes every Deployment through a metrics
// Service that reaches the port serving /metrics: the admin port.
func TestProductionServiceMonitorScrapesEveryDeployment(t *testing.T) {
	t.Parallel()
	r := render(t, "production")
	sm := custom(r, "ServiceMonitor", "onceflow")
	if sm == nil {
		t.Fatal("no ServiceMonitor onceflow")
	}
	var spec struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port string `json:"port"`
			Path string `json:"path"`
		} `json:"endpoints"`
	}
	fromUnstructured(t, sm.Object["spec"], &spec)
	if len(spec.Endpoints) != 1 || spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("ServiceMonitor endpoints %+v, want one on /metrics", spec.Endpoints)
	}
	for _, d := range all[*appsv1.Deployment](r) {
		if !scrapedBy(t, r, d, &spec.Selector, spec.Endpoints[0].Port) {
			t.Errorf("Deployment %s: no Service the ServiceMonitor selects reaches its /metrics port", d.Name)
		}
	}
}

// scrapedBy reports whether a Service matching sel selects d's pods on a
// port named port whose target is the container's admin port.
func scrapedBy(t *testing.T, r rendered, d *appsv1.Deployment, sel *metav1.LabelSelector, port string) bool {
	t.Helper()
	c := onlyContainer(t, d.Name, d.Spec.Template.Spec)
	for _, svc := range all[*corev1.Service](r) {
		if !selects(t, sel, svc.Labels) || !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.Name == port && hasPort(c, p.TargetPort) && targetsAdmin(c, p.TargetPort) {
				return true
			}
		}
	}
	return false
}

// targetsAdmin reports whether target names the container's admin port, by
// name or number.
func targetsAdmin(c corev1.Container, target intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if p.Name == "admin" && (target.StrVal == "admin" || target.IntVal == p.ContainerPort) {
			return true
		}
	}
	return false
}

// The PrometheusRule carries exactly deploy/prometheus/alerts.yaml's groups:
// the file promtool checks is the one the operator loads.
func TestPrometheusRuleIsAlertsYAML(t *testing.T) {
	t.Parallel()
	pr := custom(render(t, "production"), "PrometheusRule", "onceflow")
	if pr == nil {
		t.Fatal("no PrometheusRule onceflow")
	}
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want, have any
	if err := yaml.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	fromUnstructured(t, pr.Object["spec"], &have)
	if !reflect.DeepEqual(have, want) {
		t.Error("components/monitoring/prometheusrule.yaml differs from prometheus/alerts.yaml: run go generate ./deploy")
	}
}

// fromUnstructured converts an unstructured value into v through JSON.
func fromUnstructured(t *testing.T, from, v any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Webhook callers reach ingest over HTTPS with a certificate cert-manager
// manages, and only on /webhooks and /v1 of its public port.
func TestIngressExposesOnlyWebhooksAndAPI(t *testing.T) {
	t.Parallel()
	r := render(t, "production")
	ings := all[*networkingv1.Ingress](r)
	if len(ings) != 1 {
		t.Fatalf("%d Ingresses, want one", len(ings))
	}
	ing := ings[0]
	if ing.Annotations["cert-manager.io/cluster-issuer"] == "" && ing.Annotations["cert-manager.io/issuer"] == "" {
		t.Error("no cert-manager issuer annotation")
	}
	var tlsHosts []string
	for _, tls := range ing.Spec.TLS {
		if tls.SecretName == "" {
			t.Error("a TLS entry without a secretName for cert-manager to fill")
		}
		tlsHosts = append(tlsHosts, tls.Hosts...)
	}
	if ing.Spec.DefaultBackend != nil {
		t.Error("a default backend exposes every path")
	}
	var paths []string
	for _, rule := range ing.Spec.Rules {
		if rule.Host == "" || !slices.Contains(tlsHosts, rule.Host) {
			t.Errorf("host %q is not served over TLS", rule.Host)
		}
		for _, p := range rule.HTTP.Paths {
			paths = append(paths, p.Path)
			if p.PathType == nil || *p.PathType != networkingv1.PathTypePrefix {
				t.Errorf("path %s: want pathType Prefix", p.Path)
			}
			checkPublicBackend(t, r, p.Backend)
		}
	}
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"/v1", "/webhooks"}) {
		t.Errorf("paths %v, want exactly /v1 and /webhooks", paths)
	}
}

// checkPublicBackend checks b is ingest's Service on the port that reaches
// the container's public port (http).
func checkPublicBackend(t *testing.T, r rendered, b networkingv1.IngressBackend) {
	t.Helper()
	if b.Service == nil || b.Service.Name != "ingest" {
		t.Errorf("backend %+v, want Service ingest", b)
		return
	}
	svc := named[*corev1.Service](r, "ingest")
	for _, p := range svc.Spec.Ports {
		if (p.Name == b.Service.Port.Name && p.Name != "") || (p.Port == b.Service.Port.Number && p.Port != 0) {
			if p.TargetPort != intstr.FromString("http") {
				t.Errorf("backend reaches ingest's port %s, want its public port http", p.TargetPort.String())
			}
			return
		}
	}
	t.Errorf("backend port %+v is not a port of Service ingest", b.Service.Port)
}
