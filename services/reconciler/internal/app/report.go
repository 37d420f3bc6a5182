package app

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/admin"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// report prints the open findings to stdout: a table for people, or JSON
// with --json. It reads only the reconciler's own schema.
func report(ctx context.Context, getenv config.Getenv, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	kind := fs.String("kind", "", "only findings of this kind")
	limit := fs.Int("limit", 1000, "at most this many findings")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *limit < 1 {
		return fmt.Errorf("--limit: want 1 or more")
	}
	loaded, err := config.LoadFrom[config.Common](getenv)
	if err != nil {
		return err
	}
	pool, err := pg.Open(ctx, loaded.Value.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer pool.Close()
	rows, err := store.New(pool).OpenFindings(ctx, *kind, *limit)
	if err != nil {
		return err
	}
	return writeReport(stdout, admin.OpenFindings(rows), *asJSON)
}

func writeReport(w io.Writer, open []admin.OpenFinding, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"findings": open})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tREFERENCE\tOPENED\tLAST SEEN\tSEEN\tDETAIL")
	for _, f := range open {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", f.Kind, f.Reference, f.OpenedAt, f.LastSeenAt, f.SeenCount, f.Detail)
	}
	fmt.Fprintf(tw, "%d open findings\n", len(open))
	return tw.Flush()
}
