package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// RecordReveal records that r.Actor was shown subject's personal data for
// r.Reason.
func (s *Store) RecordReveal(ctx context.Context, subject string, r reveals.Request) (reveals.Reveal, error) {
	row, err := s.q.RevealInsert(ctx, subject, r.Actor, r.Reason)
	if err != nil {
		return reveals.Reveal{}, pg.Interpret(err, "record reveal of %s", subject)
	}
	return revealFromRow(row), nil
}

// Reveals lists the recorded reveals newest first: at most limit, with ids
// below before (0: from the newest).
func (s *Store) Reveals(ctx context.Context, before int64, limit int) ([]reveals.Reveal, error) {
	rows, err := s.q.RevealList(ctx, before, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "list reveals")
	}
	out := make([]reveals.Reveal, len(rows))
	for i, r := range rows {
		out[i] = revealFromRow(r)
	}
	return out, nil
}

func revealFromRow(r dbsqlc.IngestReveal) reveals.Reveal {
	return reveals.Reveal{ID: r.ID, Subject: r.Subject, Actor: r.Actor, Reason: r.Reason, At: r.RevealedAt.UTC()}
}

// PSPFetch is one call to a PSP about one object: the operation
// (payment, refund or payments_of_order), the id asked about, the outcome
// (found, not_found, unavailable, refused or failed) and its latency.
type PSPFetch struct {
	PSP, Operation, ObjectID, Outcome string
	Latency                           time.Duration
	At                                time.Time
}

// RecordPSPFetch records one call to a PSP, at the time of the insert.
func (s *Store) RecordPSPFetch(ctx context.Context, f PSPFetch) error {
	err := s.q.PSPFetchInsert(ctx, dbsqlc.PSPFetchInsertParams{Psp: f.PSP, Operation: f.Operation, ObjectID: f.ObjectID,
		Outcome: f.Outcome, LatencyMs: latencyMs(f.Latency)})
	return pg.Interpret(err, "record PSP fetch of %s", f.ObjectID)
}

// RecordPSPFetches records calls to PSPs in one statement (COPY), each at
// its At (now, when zero).
func (s *Store) RecordPSPFetches(ctx context.Context, fs []PSPFetch) error {
	rows := make([]dbsqlc.PSPFetchCopyParams, len(fs))
	for i, f := range fs {
		if f.At.IsZero() {
			f.At = time.Now()
		}
		rows[i] = dbsqlc.PSPFetchCopyParams{Psp: f.PSP, Operation: f.Operation, ObjectID: f.ObjectID,
			Outcome: f.Outcome, LatencyMs: latencyMs(f.Latency), FetchedAt: f.At}
	}
	_, err := s.q.PSPFetchCopy(ctx, rows)
	return pg.Interpret(err, "record %d PSP fetches", len(fs))
}

// latencyMs is a call's latency in whole milliseconds, as the column holds it.
func latencyMs(d time.Duration) int32 { return int32(min(d.Milliseconds(), 1<<31-1)) }

// PSPFetchesOf returns the latest calls (at most 200) about any of ids,
// oldest first.
func (s *Store) PSPFetchesOf(ctx context.Context, ids []string) ([]PSPFetch, error) {
	rows, err := s.q.PSPFetchesOfObjects(ctx, ids)
	if err != nil {
		return nil, pg.Interpret(err, "PSP fetches")
	}
	out := make([]PSPFetch, len(rows))
	for i, r := range rows {
		out[i] = PSPFetch{PSP: r.Psp, Operation: r.Operation, ObjectID: r.ObjectID, Outcome: r.Outcome,
			Latency: time.Duration(r.LatencyMs) * time.Millisecond, At: r.FetchedAt.UTC()}
	}
	return out, nil
}

// PrunePSPFetches deletes up to max calls made before cutoff and returns
// how many it deleted, walking the primary key under pg.WalkKeys as
// PruneReceipts does.
func (s *Store) PrunePSPFetches(ctx context.Context, cutoff time.Time, max int) (n int64, err error) {
	err = pg.InKeyWalk(ctx, s.pool, func(tx pgx.Tx) (err error) {
		n, err = s.q.WithTx(tx).PSPFetchPrune(ctx, cutoff, int32(max))
		return err
	})
	return n, pg.Interpret(err, "prune PSP fetches")
}
