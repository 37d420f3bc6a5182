package store_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// The claim and the send marker change no field the provider audit
// compares: they leave audit_changed_at alone and touch no index (HOT
// updates, counted by PostgreSQL in their own transaction). Saving a new
// status moves audit_changed_at, which is how the audit finds the document.
func TestClaimAndSendMarkerLeaveTheAuditMarkAndStayHOT(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	d := env.Record(t, invoicertest.Payment("pay-hot", 100_00, false))
	recorded := auditChangedAt(t, env, d.ID)

	token := uuid.New()
	err := pgx.BeginFunc(ctx, env.Pool, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		if _, err := q.DocumentClaimDue(ctx, &token, 60, 10); err != nil {
			return err
		}
		if _, err := q.DocumentMarkSending(ctx, dbsqlc.DocumentMarkSendingParams{LeaseSeconds: 60, LeaseToken: &token,
			ClaimedStatuses: []string{string(d.Status)}, Ids: []int64{d.ID}}); err != nil {
			return err
		}
		var updated, hot int64
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_updated('invoicer.fiscal_documents'::regclass),
       pg_stat_get_xact_tuples_hot_updated('invoicer.fiscal_documents'::regclass)`).Scan(&updated, &hot); err != nil {
			return err
		}
		if updated != 2 || hot != 2 {
			t.Errorf("claim and send marker: %d updates, %d of them HOT; want 2 and 2", updated, hot)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("claim and mark: %v", err)
	}
	if got := auditChangedAt(t, env, d.ID); !got.Equal(recorded) {
		t.Fatalf("audit_changed_at after claim and send marker: %v, want it left at %v", got, recorded)
	}

	err = env.Store.InTx(ctx, func(tx *store.Tx) error {
		fenced, err := tx.SaveResults(ctx, []store.Result{{ID: d.ID, LeaseToken: token, ClaimedStatus: d.Status,
			Status: fiscal.StatusAuthorized}})
		if err == nil && fenced[0] != nil {
			err = fenced[0]
		}
		return err
	})
	if err != nil {
		t.Fatalf("save result: %v", err)
	}
	if got := auditChangedAt(t, env, d.ID); !got.After(recorded) {
		t.Fatalf("audit_changed_at after the status changed: %v, want later than %v", got, recorded)
	}
}

// auditChangedAt reads document id's audit_changed_at.
func auditChangedAt(tb testing.TB, env *invoicertest.Env, id int64) time.Time {
	tb.Helper()
	var at time.Time
	if err := env.Pool.QueryRow(context.Background(),
		`SELECT audit_changed_at FROM invoicer.fiscal_documents WHERE id = $1`, id).Scan(&at); err != nil {
		tb.Fatalf("read audit_changed_at: %v", err)
	}
	return at
}

// auditedSet matches an assignment, in an UPDATE's SET list, to a field
// the provider audit compares.
var auditedSet = regexp.MustCompile(`(?:^|[\s,])(status|reference|amount_minor|currency|issue_date)\s*=`)

// No trigger stamps audit_changed_at (a BEFORE UPDATE trigger would lock,
// and log, every row before each update): every statement that sets a field
// the audit compares must set audit_changed_at itself.
func TestEveryAuditedChangeStampsTheAuditMark(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../../../db/invoicer/queries/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("find the invoicer's queries: %v (%d files)", err, len(files))
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range strings.Split(string(b), "-- name: ")[1:] {
			name, _, _ := strings.Cut(q, " ")
			set, ok := updateSetList(q, "invoicer.fiscal_documents")
			if !ok || !auditedSet.MatchString(set) {
				continue
			}
			checked++
			if !strings.Contains(set, "audit_changed_at") {
				t.Errorf("%s (%s) changes a field the audit compares but leaves audit_changed_at", name, filepath.Base(f))
			}
		}
	}
	if checked < 4 {
		t.Errorf("found %d statements that change an audited field; want at least the 4 known (results, adopted status, retry, void)", checked)
	}
}

// updateSetList returns the SET list of query's UPDATE of table, up to its
// FROM, WHERE or RETURNING; false when query updates no such table.
func updateSetList(query, table string) (string, bool) {
	_, rest, ok := strings.Cut(query, "UPDATE "+table)
	if !ok {
		return "", false
	}
	_, set, ok := strings.Cut(rest, "SET ")
	if !ok {
		return "", false
	}
	for _, end := range []string{"\nFROM ", "\nWHERE ", "\nRETURNING "} {
		set, _, _ = strings.Cut(set, end)
	}
	return set, true
}
