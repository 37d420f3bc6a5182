package chaos

import (
	"context"
	"fmt"
	"net/http"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// resolveInjected plays the operator: a document onceflow parked in
// needs_attention because the fiscal sandbox duplicated it on purpose is
// resolved by adopting the first of the two, as a person would after
// voiding the extra one at the provider. It returns how many it resolved.
func (r *run) resolveInjected(ctx context.Context, docs []stack.Document) (int, error) {
	first := map[string]stack.Document{}
	injected := map[string]bool{}
	for _, d := range docs {
		if d.Injected {
			injected[d.Reference] = true
		} else if _, seen := first[d.Reference]; !seen {
			first[d.Reference] = d
		}
	}
	rows, err := r.db.Query(ctx, "SELECT id, reference FROM invoicer.fiscal_documents WHERE status = 'needs_attention'")
	if err != nil {
		return 0, err
	}
	type parked struct {
		id  int64
		ref string
	}
	var todo []parked
	for rows.Next() {
		var p parked
		if err := rows.Scan(&p.id, &p.ref); err != nil {
			rows.Close()
			return 0, err
		}
		if injected[p.ref] {
			todo = append(todo, p)
		}
	}
	rows.Close()
	resolved := 0
	for _, p := range todo {
		d := first[p.ref]
		body := map[string]any{"action": "adopt", "actor": "chaos", "reason": "the sandbox duplicated it on purpose",
			"series": d.Series, "number": d.Number}
		if err := r.adminPost(ctx, fmt.Sprintf("/admin/documents/%d/resolve", p.id), body); err != nil {
			return resolved, err
		}
		resolved++
	}
	return resolved, nil
}

// adminPost posts to the first invoicer instance that answers.
func (r *run) adminPost(ctx context.Context, path string, body any) error {
	var last error
	for _, name := range r.s.Names("invoicer") {
		last = r.s.Admin(ctx, r.s.AdminURL(name), http.MethodPost, path, body, nil)
		if last == nil {
			return nil
		}
	}
	return last
}
