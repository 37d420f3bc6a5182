package deploy_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// services are the long-running Deployments (the reconciler's serve among
// them, so Prometheus scrapes its metrics); the migrations run as a Job.
var services = []string{"ingest", "relay", "invoicer", "reconciler"}

// setting is a duration setting and its default in the service's config.
type setting struct {
	key string
	def time.Duration
}

// shutdownTimeout is pkg/config's SHUTDOWN_TIMEOUT: how long requests drain.
var shutdownTimeout = setting{"SHUTDOWN_TIMEOUT", 20 * time.Second}

// inHand bounds the item a service's loops finish before the HTTP drain
// starts (worker.Group.Run): the outbound call they may be inside.
var inHand = map[string]setting{
	"ingest":   {"INGEST_PSP_TIMEOUT", 10 * time.Second},
	"invoicer": {"INVOICER_PROVIDER_TIMEOUT", 15 * time.Second},
	// The reconciler's run in flight is cut short after SHUTDOWN_TIMEOUT.
	"reconciler": shutdownTimeout,
}

func TestOverlaysRenderTheWholeSystem(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		var got []string
		for _, w := range workloads(r) {
			got = append(got, w.String())
		}
		slices.Sort(got)
		want := []string{"Deployment/console", "Deployment/ingest", "Deployment/invoicer", "Deployment/reconciler", "Deployment/relay", "Job/migrate"}
		if !slices.Equal(got, want) {
			t.Errorf("workloads %v, want %v", got, want)
		}
		for _, o := range r.objects {
			m := metaOf(t, o)
			if !clusterScoped(o) && m.GetNamespace() != namespace {
				t.Errorf("%T %s is in namespace %q, want %q", o, m.GetName(), m.GetNamespace(), namespace)
			}
		}
	})
}

// TestDeploymentsProbeAndDrain checks each service's probes and shutdown:
// liveness never depends on other systems (/healthz), readiness does
// (/readyz), and the grace period outlasts preStop plus SHUTDOWN_TIMEOUT.
func TestDeploymentsProbeAndDrain(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, name := range services {
			d := named[*appsv1.Deployment](r, name)
			if d == nil {
				t.Errorf("no Deployment %s", name)
				continue
			}
			c := onlyContainer(t, name, d.Spec.Template.Spec)
			checkProbe(t, name, "liveness", c, c.LivenessProbe, "/healthz")
			checkProbe(t, name, "readiness", c, c.ReadinessProbe, "/readyz")
			if c.StartupProbe != nil {
				checkProbe(t, name, "startup", c, c.StartupProbe, "/healthz")
			}
			checkDrain(t, r, d, c)
		}
	})
}

func checkProbe(t *testing.T, name, kind string, c corev1.Container, p *corev1.Probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s: no HTTP %s probe", name, kind)
		return
	}
	if p.HTTPGet.Path != path {
		t.Errorf("%s: %s probe on %s, want %s", name, kind, p.HTTPGet.Path, path)
	}
	if !hasPort(c, p.HTTPGet.Port) {
		t.Errorf("%s: %s probe port %s is not a container port", name, kind, p.HTTPGet.Port.String())
	}
}

// checkDrain checks the preStop sleep (the image is distroless: no shell, so
// the kubelet's sleep action) and that terminationGracePeriodSeconds outlasts
// it plus the service's two shutdown phases: the loops' item in hand, then
// SHUTDOWN_TIMEOUT of draining requests.
func checkDrain(t *testing.T, r rendered, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Errorf("%s: want a preStop sleep so endpoints drop the pod before it stops", d.Name)
		return
	}
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	drain := durationSetting(t, r, c, shutdownTimeout)
	var work time.Duration
	if s, ok := inHand[d.Name]; ok {
		work = durationSetting(t, r, c, s)
	}
	grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second <= preStop+work+drain {
		t.Errorf("%s: terminationGracePeriodSeconds %v, want more than preStop %s + work in hand %s + SHUTDOWN_TIMEOUT %s",
			d.Name, deref(grace), preStop, work, drain)
	}
}

// durationSetting reads s from c's environment, or its default.
func durationSetting(t *testing.T, r rendered, c corev1.Container, s setting) time.Duration {
	t.Helper()
	v, ok := envValue(t, r, c, s.key)
	if !ok {
		return s.def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Errorf("%s %q: %v", s.key, v, err)
	}
	return d
}

// TestPodsAreLockedDown checks every pod: non-root, read-only root
// filesystem, no capabilities or privilege escalation, RuntimeDefault
// seccomp, resources bounded, its own ServiceAccount without an API token.
func TestPodsAreLockedDown(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, w := range workloads(r) {
			spec := w.pod.Spec
			if len(spec.Containers) == 0 {
				t.Errorf("%s: no containers", w)
			}
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				checkContainerSecurity(t, w, spec.SecurityContext, c)
				checkResources(t, w, c)
			}
			checkServiceAccount(t, r, w)
		}
	})
}

func checkContainerSecurity(t *testing.T, w workload, pod *corev1.PodSecurityContext, c corev1.Container) {
	t.Helper()
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if !isTrue(sc.RunAsNonRoot) && !isTrue(pod.RunAsNonRoot) {
		t.Errorf("%s/%s: want runAsNonRoot", w, c.Name)
	}
	if uid := firstNonNil(sc.RunAsUser, pod.RunAsUser); uid != nil && *uid == 0 {
		t.Errorf("%s/%s: runs as uid 0", w, c.Name)
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Errorf("%s/%s: want readOnlyRootFilesystem", w, c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s/%s: want allowPrivilegeEscalation false", w, c.Name)
	}
	if isTrue(sc.Privileged) {
		t.Errorf("%s/%s: privileged", w, c.Name)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s/%s: capabilities %+v, want drop [ALL] and nothing added", w, c.Name, sc.Capabilities)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = pod.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s/%s: want seccomp RuntimeDefault", w, c.Name)
	}
}

func checkResources(t *testing.T, w workload, c corev1.Container) {
	t.Helper()
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[res]
		lim, hasLim := c.Resources.Limits[res]
		if !hasReq || !hasLim || req.IsZero() {
			t.Errorf("%s/%s: want a %s request and limit", w, c.Name, res)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s/%s: %s request %s above its limit %s", w, c.Name, res, req.String(), lim.String())
		}
	}
}

func checkServiceAccount(t *testing.T, r rendered, w workload) {
	t.Helper()
	spec := w.pod.Spec
	if spec.ServiceAccountName != w.name {
		t.Errorf("%s: serviceAccountName %q, want its own (%q)", w, spec.ServiceAccountName, w.name)
	}
	sa := named[*corev1.ServiceAccount](r, spec.ServiceAccountName)
	if sa == nil {
		t.Errorf("%s: ServiceAccount %q is not rendered", w, spec.ServiceAccountName)
		return
	}
	if !isFalse(spec.AutomountServiceAccountToken) && !isFalse(sa.AutomountServiceAccountToken) {
		t.Errorf("%s: mounts a Kubernetes API token it never uses", w)
	}
}

// TestImages checks every container runs the binary the Dockerfile builds for
// it, tagged in local and pinned by digest in production.
func TestImages(t *testing.T) {
	t.Parallel()
	digest := regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]+)?/onceflow/([a-z]+)@sha256:[0-9a-f]{64}$`)
	local := regexp.MustCompile(`^onceflow/([a-z]+):dev$`)
	forEachOverlay(t, func(t *testing.T, r rendered) {
		re := local
		if r.overlay == "production" {
			re = digest
		}
		for _, w := range workloads(r) {
			for _, c := range w.pod.Spec.Containers {
				m := re.FindStringSubmatch(c.Image)
				if m == nil || m[len(m)-1] != w.name {
					t.Errorf("%s: image %q, want the %s image matching %s", w, c.Image, w.name, re)
				}
			}
		}
	})
}

// TestReconcilerServesOneReplica checks the reconciler runs serve in one
// replica, replaced rather than surged: its lease already keeps a second pod
// idle, and Recreate lets the new pod take the lease its predecessor
// released instead of waiting out the TTL. A CronJob's run-once would take
// its metrics with it when the job's pod ends.
func TestReconcilerServesOneReplica(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		d := named[*appsv1.Deployment](r, "reconciler")
		if d == nil {
			t.Fatal("no Deployment reconciler")
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || autoscaled(r, "reconciler") {
			t.Errorf("reconciler replicas %v (autoscaled %v), want exactly 1", replicasOf(d), autoscaled(r, "reconciler"))
		}
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("strategy %q, want Recreate", d.Spec.Strategy.Type)
		}
		c := onlyContainer(t, "reconciler", d.Spec.Template.Spec)
		if !slices.Equal(c.Args, []string{"serve"}) || len(c.Command) > 0 {
			t.Errorf("reconciler command %v args %v, want the image's entrypoint with [serve]", c.Command, c.Args)
		}
		if _, set := envValue(t, r, c, "RECONCILER_PUSHGATEWAY_URL"); set {
			t.Error("RECONCILER_PUSHGATEWAY_URL is set: serve is scraped, and the egress policy blocks a Pushgateway")
		}
	})
}

func TestMigrationJobMigratesThenAppliesRoles(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		j := migrateJob(t, r)
		c := onlyContainer(t, "migrate", j.Spec.Template.Spec)
		if !strings.Contains(c.Image, "onceflow/migrate") {
			t.Errorf("image %q, want the db/cmd/migrate image", c.Image)
		}
		if !slices.Equal(c.Args, []string{"-roles"}) || len(c.Command) > 0 {
			t.Errorf("command %v args %v, want the migrate binary with [-roles]", c.Command, c.Args)
		}
		if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("restartPolicy %q, want Never (the Job's backoffLimit retries)", j.Spec.Template.Spec.RestartPolicy)
		}
	})
}

func onlyContainer(t *testing.T, name string, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
	}
	return spec.Containers[0]
}

func hasPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return true
		}
	}
	return false
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }

func firstNonNil[T any](vs ...*T) *T {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func deref[T any](v *T) any {
	if v == nil {
		return "unset"
	}
	return *v
}

// TestServiceAccountsAssumeTheirOwnRoles checks production gives each
// service's ServiceAccount, the console's included (its board reads the
// queues' depths), its own IAM role (IRSA) and local none.
func TestServiceAccountsAssumeTheirOwnRoles(t *testing.T) {
	t.Parallel()
	const annotation = "eks.amazonaws.com/role-arn"
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, name := range append(slices.Clone(roleOwners), "console") {
			sa := named[*corev1.ServiceAccount](r, name)
			if sa == nil {
				t.Errorf("no ServiceAccount %s", name)
				continue
			}
			arn, has := sa.Annotations[annotation]
			want := regexp.MustCompile(`^arn:aws:iam::[0-9]{12}:role/onceflow-` + name + `$`)
			switch {
			case r.overlay == "local" && has:
				t.Errorf("local ServiceAccount %s has an IAM role %q", name, arn)
			case r.overlay == "production" && !want.MatchString(arn):
				t.Errorf("ServiceAccount %s: %s %q, want its own role matching %s", name, annotation, arn, want)
			}
		}
	})
}

// TestStrictDecodingRejectsUnknownFields keeps the decoder honest: a
// misspelt field must fail, not vanish.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	t.Parallel()
	y := []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  replicas: 1
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: x
          image: x
          readinesProbe: {httpGet: {path: /readyz, port: 8080}}
`)
	if _, _, err := decoder.Decode(y, nil, nil); err == nil || !strings.Contains(err.Error(), "readinesProbe") {
		t.Fatalf("decoding a misspelt readinessProbe: got %v, want an error naming it", err)
	}
}
