package sweep

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// How a pass reads the documents created over its span of time.
const (
	// streamLead is how long before a payment became final its document
	// may have been stamped created: never, on one clock, but ingest and the
	// invoicer may be different databases.
	streamLead = 5 * time.Second
	// streamLag is how long after its payment a document is usually
	// created: the stream reads that far past a page's newest row, and a
	// document created later is looked up by its source ref.
	streamLag = time.Minute
	// streamChunk is how many documents one read takes.
	streamChunk = 5000
	// streamRatio is how many documents the stream may read for each row
	// it is asked about (a read costs about a fortieth of a look-up) before
	// the pass looks its rows up instead: the refunds' pass reads the invoices
	// of its span too, and refunds may be rare.
	streamRatio = 10
)

// docStream tells a pass which of its rows have a valid document by
// reading, in id order, the documents created over the pass's span of
// time, from streamLead before its first row needing a look-up to
// streamLag after its newest. Those reads touch only the primary key's
// pages of that span (for the recent pass, the ones the invoicer is
// writing); a look-up by source ref lands on a random page of an index as
// large as the history, which costs a run more as history grows. A row the
// stream did not see with a valid document is looked up as before, so the
// stream only ever saves work: it never decides that a document is
// missing. It forgets what was created before its current page's rows
// (less streamLead), so a pass over a day behind holds only about its
// pages' span.
type docStream struct {
	invoicer *store.InvoicerReader
	src      source
	started  bool
	done     bool                 // read nothing more: the newest document was reached, or reading cost too much
	after    int64                // the last document id read
	reached  time.Time            // the latest creation time read
	scanned  int                  // documents read
	asked    int                  // rows the stream was asked about
	valid    map[string]time.Time // source ref → the latest creation time of the read that found it
	kept     int                  // len(valid) after the last forget
}

func newDocStream(invoicer *store.InvoicerReader, src source) *docStream {
	return &docStream{invoicer: invoicer, src: src, valid: map[string]time.Time{}}
}

// split returns which of rows (ordered by the time each became final) the
// stream saw with a valid document, and the ids of the rest, to look up.
func (d *docStream) split(ctx context.Context, rows []store.Position) (have, rest []string, err error) {
	if len(rows) == 0 {
		return nil, nil, nil
	}
	d.asked += len(rows)
	d.forget(rows[0].At.Add(-streamLead))
	if err := d.cover(ctx, rows[0].At, rows[len(rows)-1].At); err != nil {
		return nil, nil, err
	}
	for _, p := range rows {
		if _, ok := d.valid[p.ID]; ok {
			have = append(have, p.ID)
		} else {
			rest = append(rest, p.ID)
		}
	}
	return have, rest, nil
}

// cover reads the documents created up to streamLag after newest, starting,
// on its first call, streamLead before oldest.
func (d *docStream) cover(ctx context.Context, oldest, newest time.Time) error {
	if !d.started {
		first, err := d.invoicer.FirstDocumentCreatedFrom(ctx, oldest.Add(-streamLead))
		if err != nil {
			return err
		}
		d.after, d.started = first-1, true
	}
	until := newest.Add(streamLag)
	for !d.done && d.reached.Before(until) {
		got, err := d.invoicer.DocumentsValidAfter(ctx, d.src.kind, d.src.docKind, d.after, streamChunk)
		if err != nil {
			return err
		}
		for _, ref := range got.Refs {
			d.valid[ref] = got.Reached
		}
		d.scanned += got.Scanned
		if got.Scanned > 0 {
			d.after = got.LastID
			d.reached = maxTime(d.reached, got.Reached)
		}
		d.done = got.Scanned < streamChunk || d.scanned > streamRatio*d.asked+streamChunk
	}
	return nil
}

// forget drops the documents read that were created before before, which
// no later row can use, once they may be half of what it holds.
func (d *docStream) forget(before time.Time) {
	if len(d.valid) < 2*d.kept+streamChunk {
		return
	}
	for ref, at := range d.valid {
		if at.Before(before) {
			delete(d.valid, ref)
		}
	}
	d.kept = len(d.valid)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
