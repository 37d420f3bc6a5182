package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// clusterScoped reports whether o lives outside any namespace.
func clusterScoped(o runtime.Object) bool {
	switch o.(type) {
	case *corev1.Namespace, *schedulingv1.PriorityClass:
		return true
	}
	return false
}

// The namespace admits only pods that meet Pod Security's restricted profile,
// and audits and warns on the same.
func TestNamespaceEnforcesRestricted(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		ns := named[*corev1.Namespace](r, namespace)
		if ns == nil {
			t.Fatalf("no Namespace %s", namespace)
		}
		for _, mode := range []string{"enforce", "audit", "warn"} {
			key := "pod-security.kubernetes.io/" + mode
			if ns.Labels[key] != "restricted" || ns.Labels[key+"-version"] == "" {
				t.Errorf("namespace labels %v: want %s=restricted and a pinned %s-version", ns.Labels, key, key)
			}
		}
	})
}

// restrictedVolumes are the volume types Pod Security's restricted profile
// allows.
var restrictedVolumes = []string{"configMap", "secret", "emptyDir", "projected", "downwardAPI", "persistentVolumeClaim", "ephemeral", "csi"}

// Beyond the container settings TestPodsAreLockedDown checks, the restricted
// profile forbids host namespaces, host ports, host paths and other volume
// types, unsafe sysctls and an Unconfined seccomp anywhere.
func TestPodsMeetRestrictedProfile(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, w := range workloads(r) {
			spec := w.pod.Spec
			if spec.HostNetwork || spec.HostPID || spec.HostIPC {
				t.Errorf("%s: shares a host namespace", w)
			}
			if sc := spec.SecurityContext; sc == nil || !isTrue(sc.RunAsNonRoot) || sc.SeccompProfile == nil ||
				sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || len(sc.Sysctls) > 0 {
				t.Errorf("%s: pod securityContext %+v, want runAsNonRoot, seccomp RuntimeDefault, no sysctls", w, sc)
			}
			for _, v := range spec.Volumes {
				b, _ := yaml.Marshal(v.VolumeSource)
				typ, _, _ := strings.Cut(string(b), ":")
				if !slices.Contains(restrictedVolumes, typ) {
					t.Errorf("%s: volume %s of type %s, which restricted forbids", w, v.Name, typ)
				}
			}
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				for _, p := range c.Ports {
					if p.HostPort != 0 {
						t.Errorf("%s/%s: hostPort %d", w, c.Name, p.HostPort)
					}
				}
				if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
					t.Errorf("%s/%s: seccomp Unconfined", w, c.Name)
				}
			}
		}
	})
}

// Every Deployment spreads its pods, revision by revision, across nodes and
// zones; production refuses to stack a zone.
func TestDeploymentsSpreadAcrossNodesAndZones(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		deployments := all[*appsv1.Deployment](r)
		if len(deployments) < 3 {
			t.Fatalf("%d Deployments, want the services", len(deployments))
		}
		for _, d := range deployments {
			want := map[string]corev1.UnsatisfiableConstraintAction{
				"kubernetes.io/hostname":      corev1.ScheduleAnyway,
				"topology.kubernetes.io/zone": corev1.ScheduleAnyway,
			}
			if r.overlay == "production" {
				want["topology.kubernetes.io/zone"] = corev1.DoNotSchedule
			}
			pod := d.Spec.Template
			for _, c := range pod.Spec.TopologySpreadConstraints {
				when, ok := want[c.TopologyKey]
				delete(want, c.TopologyKey)
				if !ok || c.MaxSkew != 1 || c.WhenUnsatisfiable != when {
					t.Errorf("Deployment %s: spread %s maxSkew %d %s, want maxSkew 1 %s", d.Name, c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable, when)
				}
				if !selects(t, c.LabelSelector, pod.Labels) || pod.Labels["app.kubernetes.io/name"] != d.Name ||
					!slices.Contains(c.MatchLabelKeys, "app.kubernetes.io/name") || !slices.Contains(c.MatchLabelKeys, "pod-template-hash") {
					t.Errorf("Deployment %s: spread %s counts %v + keys %v, want its own pods of its own revision", d.Name, c.TopologyKey, c.LabelSelector, c.MatchLabelKeys)
				}
			}
			if len(want) > 0 {
				t.Errorf("Deployment %s: no spread across %v", d.Name, want)
			}
		}
	})
}

// Every container's GOMEMLIMIT is its own memory limit read through the
// downward API, at 95.4% (MiB read as millions of bytes).
func TestGoMemLimitFollowsTheMemoryLimit(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, w := range workloads(r) {
			for _, c := range w.pod.Spec.Containers {
				checkGoMemLimit(t, w, c)
			}
		}
	})
}

func checkGoMemLimit(t *testing.T, w workload, c corev1.Container) {
	t.Helper()
	mib := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT_MIB" })
	lim := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
	if mib < 0 || lim < mib || c.Env[lim].Value != "$(GOMEMLIMIT_MIB)000000B" {
		t.Errorf("%s/%s: env %v, want GOMEMLIMIT_MIB then GOMEMLIMIT=$(GOMEMLIMIT_MIB)000000B", w, c.Name, c.Env)
		return
	}
	ref := c.Env[mib].ValueFrom
	if ref == nil || ref.ResourceFieldRef == nil || ref.ResourceFieldRef.Resource != "limits.memory" ||
		(ref.ResourceFieldRef.ContainerName != "" && ref.ResourceFieldRef.ContainerName != c.Name) ||
		ref.ResourceFieldRef.Divisor.Cmp(resource.MustParse("1Mi")) != 0 {
		t.Errorf("%s/%s: GOMEMLIMIT_MIB is %+v, want its own limits.memory with divisor 1Mi", w, c.Name, ref)
		return
	}
	limit := c.Resources.Limits.Memory().Value()
	if limit <= 0 || limit%(1<<20) != 0 {
		t.Errorf("%s/%s: memory limit %d bytes, want whole MiB (the downward API rounds up)", w, c.Name, limit)
		return
	}
	if got := float64(limit>>20) * 1e6 / float64(limit); got < 0.9 || got > 0.97 {
		t.Errorf("%s/%s: GOMEMLIMIT is %.3f of the limit, want 0.90–0.97", w, c.Name, got)
	}
}

// The patches that set env replace the whole list: no manifest may have an
// env of its own that they would drop.
func TestManifestsHaveNoEnvThePatchesWouldDrop(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("base/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("base manifests: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var m any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if path := findEnv(m, ""); path != "" {
				t.Errorf("%s: %s has an env list the base patches (patches/*.yaml) replace: move it to the ConfigMap or teach the patch to append", f, path)
			}
		}
	}
}

// findEnv returns the path of the first containers[].env under v, or "".
func findEnv(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["env"]; ok && strings.Contains(path, "containers") {
			return path + ".env"
		}
		for k, e := range x {
			if p := findEnv(e, path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for _, e := range x {
			if p := findEnv(e, path+"[]"); p != "" {
				return p
			}
		}
	}
	return ""
}

// Every pod runs at onceflow's priority, a class the overlays render, above
// ordinary work and below the cluster's own critical classes.
func TestPodsRunAtOnceflowPriority(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		pc := named[*schedulingv1.PriorityClass](r, "onceflow")
		if pc == nil || pc.Value <= 0 || pc.Value >= 1_000_000_000 || pc.GlobalDefault {
			t.Fatalf("PriorityClass onceflow %+v, want a value in (0, 1e9) and not the global default", pc)
		}
		for _, w := range workloads(r) {
			if w.pod.Spec.PriorityClassName != pc.Name {
				t.Errorf("%s: priorityClassName %q, want %q", w, w.pod.Spec.PriorityClassName, pc.Name)
			}
		}
	})
}
