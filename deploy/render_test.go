package deploy_test

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// overlays are the environments deploy/ renders.
var overlays = []string{"local", "production"}

// namespace is where every overlay puts onceflow.
const namespace = "onceflow"

// rendered is one overlay's output, decoded.
type rendered struct {
	overlay string
	objects []runtime.Object
	// custom holds the objects of kinds k8s.io/api does not define (KEDA's).
	custom []*unstructured.Unstructured
}

// decoder decodes the kinds onceflow uses and fails on unknown or duplicate
// fields, so a typo in a manifest is an error rather than a silent no-op.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, batchv1.AddToScheme, corev1.AddToScheme,
		policyv1.AddToScheme, autoscalingv2.AddToScheme, networkingv1.AddToScheme,
		schedulingv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// customGroups are the API groups decoded as unstructured objects: KEDA's
// and the Prometheus Operator's.
var customGroups = []string{"keda.sh", "monitoring.coreos.com"}

// render runs kustomize on overlays/<overlay> in-process and decodes every
// manifest.
func render(tb testing.TB, overlay string) rendered {
	tb.Helper()
	return renderDir(tb, overlay, "overlays/"+overlay)
}

// renderDir renders the kustomization in dir as overlay.
func renderDir(tb testing.TB, overlay, dir string) rendered {
	tb.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		tb.Fatalf("kustomize %s: %v", dir, err)
	}
	out := rendered{overlay: overlay}
	for _, res := range resMap.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			tb.Fatalf("%s: %s: %v", overlay, res.CurId(), err)
		}
		if slices.Contains(customGroups, res.GetGvk().Group) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(mustJSON(tb, y)); err != nil {
				tb.Fatalf("%s: %s: %v", overlay, res.CurId(), err)
			}
			out.custom = append(out.custom, u)
			continue
		}
		obj, _, err := decoder.Decode(y, nil, nil)
		if err != nil {
			tb.Fatalf("%s: decode %s strictly: %v", overlay, res.CurId(), err)
		}
		out.objects = append(out.objects, obj)
	}
	return out
}

// all returns the rendered objects of type T.
func all[T runtime.Object](r rendered) []T {
	var out []T
	for _, o := range r.objects {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// named returns the rendered object of type T called name, or nil.
func named[T interface {
	runtime.Object
	GetName() string
}](r rendered, name string) T {
	for _, o := range all[T](r) {
		if o.GetName() == name {
			return o
		}
	}
	var zero T
	return zero
}

// workload is a pod template and the object that owns it.
type workload struct {
	kind, name string
	pod        corev1.PodTemplateSpec
}

func (w workload) String() string { return fmt.Sprintf("%s/%s", w.kind, w.name) }

// workloads returns every pod template: Deployments, CronJobs and Jobs. A
// Job is named by the app it runs (app.kubernetes.io/name): its object name
// carries the release (deploy/README.md, "Order of a rollout").
func workloads(r rendered) []workload {
	var out []workload
	for _, d := range all[*appsv1.Deployment](r) {
		out = append(out, workload{"Deployment", d.Name, d.Spec.Template})
	}
	for _, c := range all[*batchv1.CronJob](r) {
		out = append(out, workload{"CronJob", c.Name, c.Spec.JobTemplate.Spec.Template})
	}
	for _, j := range all[*batchv1.Job](r) {
		out = append(out, workload{"Job", j.Labels["app.kubernetes.io/name"], j.Spec.Template})
	}
	return out
}

// forEachOverlay renders each overlay once and runs check on it as a subtest.
func forEachOverlay(t *testing.T, check func(t *testing.T, r rendered)) {
	t.Helper()
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			t.Parallel()
			check(t, render(t, overlay))
		})
	}
}

// mustJSON converts one rendered manifest to JSON, failing on duplicate keys.
func mustJSON(tb testing.TB, y []byte) []byte {
	tb.Helper()
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		tb.Fatal(err)
	}
	return j
}
