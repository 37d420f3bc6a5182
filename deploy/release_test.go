package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// migrateJob returns the one rendered migrate Job, found by its app label.
func migrateJob(t *testing.T, r rendered) *batchv1.Job {
	t.Helper()
	var jobs []*batchv1.Job
	for _, j := range all[*batchv1.Job](r) {
		if j.Labels["app.kubernetes.io/name"] == "migrate" {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) != 1 {
		t.Fatalf("%d migrate Jobs, want one", len(jobs))
	}
	return jobs[0]
}

// jobName is a name a Job can carry: its pods' job-name label takes it, so a
// DNS label of at most 63 characters.
var jobName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// The migrate Job is named after the overlay's release, so each release's
// apply creates a new Job rather than patching a finished one.
func TestMigrateJobIsNamedPerRelease(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		cm := named[*corev1.ConfigMap](r, "onceflow-release")
		if cm == nil || cm.Data["RELEASE"] == "" {
			t.Fatal("no ConfigMap onceflow-release with a RELEASE")
		}
		j := migrateJob(t, r)
		if want := "migrate-" + cm.Data["RELEASE"]; j.Name != want || !jobName.MatchString(j.Name) {
			t.Errorf("migrate Job named %q, want %q, a DNS label", j.Name, want)
		}
		if j.Spec.TTLSecondsAfterFinished == nil {
			t.Error("a finished migrate Job is never removed")
		}
	})
}

// Setting another release, as the release pipeline does, renames the Job.
func TestAnotherReleaseRendersAnotherMigrateJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, sub := range []string{"base", "components", "overlays"} {
		copyTree(t, sub, filepath.Join(dir, sub))
	}
	kust := filepath.Join(dir, "overlays", "production", "kustomization.yaml")
	b, err := os.ReadFile(kust)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`RELEASE=\S+`).ReplaceAllString(string(b), "RELEASE=2026-12-01-rc2")
	if edited == string(b) {
		t.Fatal("overlays/production sets no RELEASE")
	}
	if err := os.WriteFile(kust, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	r := renderDir(t, "production", filepath.Join(dir, "overlays", "production"))
	if j := migrateJob(t, r); j.Name != "migrate-2026-12-01-rc2" {
		t.Errorf("with RELEASE=2026-12-01-rc2 the Job is %q", j.Name)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, strings.TrimPrefix(path, from))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
