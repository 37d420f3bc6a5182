package bench

import (
	"math"
	"testing"

	"github.com/onceflow/onceflow/pkg/pgtest"
)

func TestPGByRoleSplitsTheBackends(t *testing.T) {
	t.Parallel()
	// Backends 41 and 42 serve ingest, 43 (started in the stage) the
	// invoicer; 41 exits meanwhile, so its time is the postmaster's (40)
	// reaped time, which no role claims, as 44's, a background process.
	before := CPUTimes{{"postgres", 40, false}: 1, {"postgres", 40, true}: 20,
		{"postgres", 41, false}: 5, {"postgres", 42, false}: 2, {"ingest-1", 7, false}: 1}
	after := CPUTimes{{"postgres", 40, false}: 1.1, {"postgres", 40, true}: 26.1,
		{"postgres", 42, false}: 2.6, {"postgres", 43, false}: 0.4, {"postgres", 44, false}: 0.2, {"ingest-1", 7, false}: 2}
	roles := map[int]string{41: "ingest", 42: "ingest", 43: "invoicer", 7: "relay"}
	got := PGByRole(before, after, roles)
	want := map[string]float64{"ingest": 0.6, "invoicer": 0.4}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for role, w := range want {
		if math.Abs(got[role]-w) > 1e-9 {
			t.Errorf("%s: got %v, want %v", role, got[role], w)
		}
	}
}

func TestReadPGRolesNamesTheSessions(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	var pid int
	var role string
	if err := pool.QueryRow(t.Context(), `SELECT pg_backend_pid(), current_user`).Scan(&pid, &role); err != nil {
		t.Fatal(err)
	}
	roles, err := ReadPGRoles(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if roles[pid] != role {
		t.Errorf("backend %d: role %q, want %q (read %v)", pid, roles[pid], role, roles)
	}
}
