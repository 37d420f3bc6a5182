package audit

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// listing returns the provider's documents of day, ours numbering ours: in
// one query while that is at most WholeDay, else type by type in ranges of
// NumberRange numbers around the numbers of ours (listRanges), so no answer
// outgrows what the adapter reads, however large the day.
func (r *auditRun) listing(ctx context.Context, day time.Time, ours int) ([]fiscal.Held, error) {
	if ours <= r.cfg.WholeDay {
		r.metrics.queries.Inc()
		return r.provider.ListPeriod(ctx, day, day)
	}
	bands, err := r.invoicer.AuditNumberBands(ctx, dateOnly(day))
	if err != nil {
		return nil, err
	}
	var held []fiscal.Held
	for _, b := range bands {
		found, err := r.listRanges(ctx, day, b)
		if err != nil {
			return nil, err
		}
		held = append(held, found...)
	}
	return held, nil
}

// listRanges lists the documents of b's type issued on day, a range of
// NumberRange numbers at a time: every range from our lowest number of the
// day to our highest, then on upwards, and downwards from our lowest, each
// way until a range holds nothing. A type's numbers only grow, so another
// issuer's document of that day and type lies among ours or next to them,
// and a range without any document of the day ends the day's numbers on
// that side.
func (r *auditRun) listRanges(ctx context.Context, day time.Time, b store.NumberBand) ([]fiscal.Held, error) {
	size := int64(r.cfg.NumberRange)
	var out []fiscal.Held
	list := func(first, last int64) (int, error) {
		r.metrics.queries.Inc()
		held, err := r.provider.ListNumbers(ctx, day, fiscal.CFEType(b.CFEType), first, last)
		out = append(out, held...)
		return len(held), err
	}
	for first := b.Lowest; ; first += size {
		n, err := list(first, first+size-1)
		if err != nil {
			return nil, err
		}
		if n == 0 && first+size-1 >= b.Highest {
			break
		}
	}
	for last := b.Lowest - 1; last >= 1; last -= size {
		n, err := list(max(1, last-size+1), last)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}
