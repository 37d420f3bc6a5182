package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each query planned at each execution is one of the service's queries:
// pg.PlanEach matches a name and would let a misspelt one pass unnoticed.
func TestPlanEachNamesQueries(t *testing.T) {
	files, err := filepath.Glob("../../../../db/ingest/queries/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("query files: %v (%d found)", err, len(files))
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, name := range planEach {
		if !strings.Contains(all.String(), "-- name: "+name+" ") {
			t.Errorf("planEach names %s, which no query in db/ingest/queries is called", name)
		}
	}
}
