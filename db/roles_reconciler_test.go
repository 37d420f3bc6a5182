package db_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReconcilerQueriesRunAsItsRole runs every query of
// db/reconciler/queries that reads another service's schema as
// onceflow_reconciler, its parameters NULL: the column grants of
// db/roles/roles.sql must cover each one, and a query added later that reads
// a column left out fails here.
func TestReconcilerQueriesRunAsItsRole(t *testing.T) {
	t.Parallel()
	dsn, _ := rolesDatabase(t)
	queries := reconcilerQueries(t)
	crossSchema := 0
	for name, sql := range queries {
		if !regexp.MustCompile(`\b(ingest|invoicer|relay)\.`).MatchString(sql) {
			continue
		}
		crossSchema++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := asRole(t, dsn, reconciler, nullParams(sql)); err != nil {
				t.Fatalf("%s as %s: %v", name, reconciler, err)
			}
		})
	}
	if crossSchema < 15 {
		t.Fatalf("found %d reconciler queries on other schemas, want at least 15", crossSchema)
	}
}

// reconcilerQueries returns the reconciler's sqlc queries by name.
func reconcilerQueries(tb testing.TB) map[string]string {
	tb.Helper()
	files, err := filepath.Glob("reconciler/queries/*.sql")
	if err != nil || len(files) == 0 {
		tb.Fatalf("reconciler queries: %v (found %d files)", err, len(files))
	}
	queries := map[string]string{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, part := range strings.Split(string(text), "-- name: ")[1:] {
			name, body, _ := strings.Cut(part, "\n")
			queries[strings.Fields(name)[0]] = body
		}
	}
	return queries
}

// sqlcParam is a sqlc named parameter, with its cast when it has one.
var sqlcParam = regexp.MustCompile(`@\w+(::[\w\[\]]+)?`)

// nullParams replaces every named parameter with a NULL of its cast type.
func nullParams(sql string) string {
	return sqlcParam.ReplaceAllStringFunc(sql, func(p string) string {
		if _, cast, ok := strings.Cut(p, "::"); ok {
			return "NULL::" + cast
		}
		return "NULL"
	})
}
