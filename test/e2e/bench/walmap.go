package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// walByRelation sums, with pg_walinspect, the WAL records written between
// two positions by the relation of their first block: a table, one of its
// indexes or its TOAST table, each named with the table it belongs to. A
// record that touches no block of this database (a commit, a checkpoint)
// is counted under its resource manager's name in parentheses.
const walByRelation = `
WITH w AS (
    SELECT record_length::float8 + fpi_length AS bytes, fpi_length::float8 AS fpi,
           resource_manager || '/' || split_part(record_type, ' ', 1) AS rec,
           regexp_match(block_ref, 'rel \d+/(\d+)/(\d+)') AS rel
    FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
), named AS (
    SELECT w.bytes, w.fpi, w.rec,
           CASE WHEN w.rel IS NULL OR w.rel[1]::oid <> d.oid THEN NULL
                ELSE pg_filenode_relation(0, w.rel[2]::oid) END AS relid
    FROM w, pg_database d WHERE d.datname = current_database()
)
SELECT coalesce(c.oid::regclass::text, '(' || split_part(n.rec, '/', 1) || ')'),
       coalesce(owner.oid::regclass::text, c.oid::regclass::text, ''),
       coalesce(c.relkind::text, ''), n.rec, count(*), sum(n.bytes), sum(n.fpi)
FROM named n
LEFT JOIN pg_class c ON c.oid = n.relid
LEFT JOIN pg_index i ON i.indexrelid = c.oid
LEFT JOIN pg_class owner ON owner.oid = coalesce(i.indrelid,
    (SELECT t.oid FROM pg_class t WHERE c.relkind = 't' AND t.reltoastrelid = c.oid))
GROUP BY 1, 2, 3, 4`

// walCount is one relation's records of one kind over the burst.
type walCount struct {
	relation, table, relkind, record string
	records                          int64
	bytes, fpi                       float64
}

// readWALByRelation reads the WAL between the two positions by relation
// and record kind (walByRelation).
func readWALByRelation(ctx context.Context, db *pgxpool.Pool, from, to string) ([]walCount, error) {
	rows, err := db.Query(ctx, walByRelation, from, to)
	if err != nil {
		return nil, fmt.Errorf("read the WAL with pg_walinspect: %w", err)
	}
	counts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (walCount, error) {
		var c walCount
		err := row.Scan(&c.relation, &c.table, &c.relkind, &c.record, &c.records, &c.bytes, &c.fpi)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the WAL with pg_walinspect: %w", err)
	}
	return counts, nil
}

// TableWAL is the WAL one table (with its indexes and TOAST) or one kind of
// record that touches no table wrote, per document.
type TableWAL struct {
	Table   string             `json:"table"`
	Bytes   float64            `json:"bytes_per_doc"`
	Heap    float64            `json:"heap_bytes_per_doc"`   // the table's own blocks, TOAST included
	Indexes map[string]float64 `json:"index_bytes_per_doc"`  // by index
	Records map[string]float64 `json:"records_per_doc"`      // by kind (Heap/HOT_UPDATE, Btree/INSERT_LEAF, ...)
	Kinds   map[string]float64 `json:"record_bytes_per_doc"` // the same kinds' bytes
	FPI     float64            `json:"full_page_bytes_per_doc"`
}

// ReadWALByTable reads the WAL between two positions (pg_lsn text, the
// second flushed already) by table, per document of docs, most WAL first.
// The database needs pg_walinspect.
func ReadWALByTable(ctx context.Context, db *pgxpool.Pool, from, to string, docs float64) ([]TableWAL, error) {
	counts, err := readWALByRelation(ctx, db, from, to)
	if err != nil {
		return nil, err
	}
	return walByTable(counts, docs), nil
}

// walByTable folds the relations' counts into their tables, per document,
// most WAL first.
func walByTable(counts []walCount, docs float64) []TableWAL {
	if docs <= 0 {
		return nil
	}
	n := docs
	byName := map[string]*TableWAL{}
	for _, c := range counts {
		name := cmp.Or(c.table, c.relation)
		t := byName[name]
		if t == nil {
			t = &TableWAL{Table: name, Indexes: map[string]float64{}, Records: map[string]float64{}, Kinds: map[string]float64{}}
			byName[name] = t
		}
		t.Bytes += c.bytes / n
		t.FPI += c.fpi / n
		t.Records[c.record] += float64(c.records) / n
		t.Kinds[c.record] += c.bytes / n
		if c.relkind == "i" {
			t.Indexes[c.relation] += c.bytes / n
		} else {
			t.Heap += c.bytes / n
		}
	}
	tables := make([]TableWAL, 0, len(byName))
	for _, t := range byName {
		tables = append(tables, *t)
	}
	slices.SortFunc(tables, func(a, b TableWAL) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Table, b.Table))
	})
	return tables
}

// describeWAL writes the largest writers of WAL for the progress output.
func describeWAL(tables []TableWAL, top int) string {
	var b strings.Builder
	for _, t := range tables[:min(top, len(tables))] {
		fmt.Fprintf(&b, "\n           %6.0f WAL B  %-30s table %5.0f, %d indexes %5.0f; %s",
			t.Bytes, t.Table, t.Heap, len(t.Indexes), t.Bytes-t.Heap, strings.Join(t.topKinds(6), ", "))
	}
	return b.String()
}

// topKinds names the table's n kinds of record that wrote most, each with
// its bytes and, in brackets, its records per document.
func (t TableWAL) topKinds(n int) []string {
	kinds := slices.Sorted(maps.Keys(t.Kinds))
	slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(t.Kinds[b], t.Kinds[a]) })
	parts := make([]string, 0, n)
	for _, k := range kinds[:min(n, len(kinds))] {
		parts = append(parts, fmt.Sprintf("%s %.0f (%.2f)", k, t.Kinds[k], t.Records[k]))
	}
	return parts
}
