// Package layout checks the shape of the code that issue-level rules ask
// for and a compiler cannot: which packages may import the generated sqlc
// code and the HTTP server, where driver errors may be named, and the
// limits of the root README. A failure names the file that breaks the rule.
package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/onceflow/onceflow/"

// source is one non-test, non-generated Go file of the repository.
type source struct {
	path    string // relative to the repository root, slash-separated
	imports []string
	text    string
}

// sources parses every non-test Go file under the repository root.
func sources(t *testing.T) []source {
	t.Helper()
	root := repoRoot(t)
	var out []source
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, body, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		s := source{path: filepath.ToSlash(rel), text: string(body)}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			s.imports = append(s.imports, p)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found %d Go files under %s: not the repository root?", len(out), root)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// inStore reports whether path is inside a service's store package (the
// generated code included) or pkg/pg, the one place driver errors are read.
func inStore(path string) bool {
	return regexp.MustCompile(`^services/[a-z]+/internal/store/`).MatchString(path) || strings.HasPrefix(path, "pkg/pg/")
}

func TestOnlyStoresImportGeneratedCode(t *testing.T) {
	for _, s := range sources(t) {
		for _, imp := range s.imports {
			if strings.HasSuffix(imp, "/internal/store/dbsqlc") && !inStore(s.path) {
				t.Errorf("%s imports %s: only the service's store package may", s.path, imp)
			}
		}
	}
}

var driverErrors = regexp.MustCompile(`pgx\.ErrNoRows|pgconn\.PgError|"(23505|23503|23P01|40001|40P01)"|IsUniqueViolation|IsForeignKeyViolation`)

func TestOnlyStoresNameDriverErrors(t *testing.T) {
	for _, s := range sources(t) {
		if inStore(s.path) {
			continue
		}
		if m := driverErrors.FindString(s.text); m != "" {
			t.Errorf("%s mentions %s: translate driver errors in the store (pg.Interpret) and check errkind kinds", s.path, m)
		}
	}
}

func TestLoopsDoNotImportTheHTTPServer(t *testing.T) {
	loops := []string{
		"services/ingest/internal/apply/", "services/ingest/internal/poller/", "services/ingest/internal/housekeeping/",
		"services/relay/internal/relay/", "services/invoicer/internal/emit/", "services/invoicer/internal/consumer/",
	}
	for _, s := range sources(t) {
		for _, dir := range loops {
			if !strings.HasPrefix(s.path, dir) {
				continue
			}
			for _, imp := range s.imports {
				if imp == module+"pkg/httpserver" {
					t.Errorf("%s imports pkg/httpserver: loops use pkg/worker", s.path)
				}
			}
		}
	}
}

// The project carries its own docs: no tracked file may send the reader to
// the design or API notes that live outside the repository.
func TestNoTrackedFileCitesOutsideDocuments(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the check needs a git checkout)", err)
	}
	outside := []string{"DESIGN" + ".md", "API-" + "FACTS"} // split so this file does not cite them
	for _, path := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		body, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			continue // deleted in the working tree
		}
		for _, name := range outside {
			if strings.Contains(string(body), name) {
				t.Errorf("%s cites %s, a document outside the repository: say it in docs/", path, name)
			}
		}
	}
}
