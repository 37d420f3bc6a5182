package audit

import (
	"context"
	"maps"
	"slices"
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
		held, err := r.provider.ListPeriod(ctx, day, day)
		if err != nil {
			return nil, err
		}
		return held, r.pace(ctx, len(held))
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
// day to our highest, then on upwards until a range is not full, and
// downwards from our lowest until a range holds nothing. A type's numbers
// only grow, so another issuer's document of that day and type lies among ours or next to them,
// and a range without any document of the day ends the day's numbers on
// that side.
func (r *auditRun) listRanges(ctx context.Context, day time.Time, b store.NumberBand) ([]fiscal.Held, error) {
	typ := fiscal.CFEType(b.CFEType)
	out, err := r.listUpwards(ctx, day, typ, b.Lowest, b.Highest)
	if err != nil {
		return nil, err
	}
	size := int64(r.cfg.NumberRange)
	for last := b.Lowest - 1; last >= 1; last -= size {
		held, err := r.listNumbers(ctx, day, typ, max(1, last-size+1), last)
		if err != nil {
			return nil, err
		}
		out = append(out, held...)
		if len(held) == 0 {
			break
		}
	}
	return out, nil
}

// listUpwards lists typ's documents of day a range of NumberRange numbers
// at a time from first on, until a range that reaches through holds fewer
// documents than numbers: the numbers issued so far end there. Documents
// issued while the listing runs fill the ranges ahead of it, so on a
// growing today it gains on them only at its pace minus their rate; those
// it does not reach lie above the highest number it saw, where the next
// onward listing starts.
func (r *auditRun) listUpwards(ctx context.Context, day time.Time, typ fiscal.CFEType, first, through int64) ([]fiscal.Held, error) {
	size := int64(r.cfg.NumberRange)
	var out []fiscal.Held
	for ; ; first += size {
		held, err := r.listNumbers(ctx, day, typ, first, first+size-1)
		if err != nil {
			return nil, err
		}
		out = append(out, held...)
		if int64(len(held)) < size && first+size-1 >= through {
			return out, nil
		}
	}
}

// listNumbers is one query of a listing in ranges, paced.
func (r *auditRun) listNumbers(ctx context.Context, day time.Time, typ fiscal.CFEType, first, last int64) ([]fiscal.Held, error) {
	r.metrics.queries.Inc()
	held, err := r.provider.ListNumbers(ctx, day, typ, first, last)
	if err != nil {
		return nil, err
	}
	return held, r.pace(ctx, len(held))
}

// listOnward lists day onward: for each type an earlier listing of the
// day saw, the numbers above the highest it saw, in ranges until one holds
// nothing, and compares what the provider holds there with ours under the
// same references. A document only the provider holds, or held twice, is
// found among the new numbers at the cost of what is new. Our documents of
// the day are not read: each is looked up by reference once it changes
// (lookUpChanged), and being issued changes it. A day no listing recorded
// numbers for is listed in full.
func (r *auditRun) listOnward(ctx context.Context, day time.Time) error {
	through, err := r.own.AuditDayNumbers(ctx, r.cfg.Provider, dateOnly(day))
	if err != nil {
		return err
	}
	if len(through) == 0 {
		return r.listDay(ctx, day)
	}
	var held []fiscal.Held
	for _, typ := range slices.Sorted(maps.Keys(through)) {
		found, err := r.listUpwards(ctx, day, fiscal.CFEType(typ), through[typ]+1, through[typ])
		if err != nil {
			return err
		}
		held = append(held, found...)
	}
	r.metrics.daysOnward.Inc()
	r.onward[dateOnly(day)] = true
	_, err = r.compareListed(ctx, day, held)
	return err
}
