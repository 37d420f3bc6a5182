package app_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
)

// TestRunOnceAsItsOwnRole runs a whole reconciliation, sweep, detectors and
// provider audit included, connected as onceflow_reconciler with the grants
// of db/roles/roles.sql: the column grants cover everything it reads, and
// it still cannot read a customer.
func TestRunOnceAsItsOwnRole(t *testing.T) {
	t.Parallel()
	d := reconcilertest.NewDB(t)
	seed(t, d)
	if err := db.ApplyRoles(t.Context(), d.DSN, nil); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(db.Role("reconciler")) // the test cluster trusts local connections
	fis := reconcilertest.NewFiscal(t)
	env := testEnv(t, d)
	for k, v := range map[string]string{
		"DATABASE_URL": u.String(), "RECONCILER_AUDIT": "on", "INVOICY_BASE_URL": fis.BaseURL,
		"INVOICY_EMP_CODIGO": reconcilertest.EmpCodigo, "INVOICY_EMP_PK": reconcilertest.EmpPK, "INVOICY_ACCESS_KEY": reconcilertest.AccessKey,
	} {
		env[k] = v
	}

	out, err := runMain(env, "run-once")
	if err != nil {
		t.Fatalf("run-once as %s: %v (%s)", db.Role("reconciler"), err, out)
	}
	if !strings.HasPrefix(out, "reconcile: checked=4 missing=3 republished=2 missing_events=1") {
		t.Fatalf("stdout = %q, want the seeded reconciliation", out)
	}
	runs := d.Runs(t)
	if len(runs) != 1 || !runs[0].Finished {
		t.Fatalf("runs = %+v, want one finished", runs)
	}
}
