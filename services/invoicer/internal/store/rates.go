package store

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// Rate implements rates.Source over invoicer.rates: code's value on day,
// or the latest of the six days before; rates.ErrMissing when there is none.
func (q queries) Rate(ctx context.Context, code string, day time.Time) (*big.Rat, error) {
	s, err := q.q.RateOn(ctx, code, rates.Day(day))
	if err = pg.Interpret(err, "rate of %s", code); errkind.Is(err, errkind.NotFound) {
		return nil, fmt.Errorf("%s on %s: %w", code, rates.Day(day).Format(time.DateOnly), rates.ErrMissing)
	}
	if err != nil {
		return nil, err
	}
	v, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("rate of %s: stored value %q is not a decimal", code, s)
	}
	return v, nil
}

// SaveRate records code's value on day from source, replacing a value
// already stored only when replace is set.
func (q queries) SaveRate(ctx context.Context, code string, day time.Time, value *big.Rat, source string, replace bool) error {
	err := q.q.RateSave(ctx, dbsqlc.RateSaveParams{Code: code, Day: rates.Day(day), Value: value.FloatString(6), Source: source, Replace: replace})
	return pg.Interpret(err, "save rate of %s", code)
}

// FixExchangeRate fixes document id's exchange rate (thousandths) unless one
// is fixed already, and returns the rate the document keeps.
func (q queries) FixExchangeRate(ctx context.Context, id, milli int64) (int64, error) {
	v, err := q.q.DocumentFixExchangeRate(ctx, milli, id)
	if err != nil {
		return 0, pg.Interpret(err, "fix exchange rate of document %d", id)
	}
	if v == nil {
		return 0, fmt.Errorf("document %d kept no exchange rate", id)
	}
	return *v, nil
}

// Rates is the invoicer's rate source: invoicer.rates first, then upstream
// (BCU; nil for none), whose answers are kept in the table so that later
// look-ups of the same date find the same value.
type Rates struct {
	Store    *Store
	Upstream rates.Source
	Name     string // the upstream's name, recorded as each kept value's source
}

// Rate implements rates.Source.
func (r Rates) Rate(ctx context.Context, code string, day time.Time) (*big.Rat, error) {
	v, err := r.Store.Rate(ctx, code, day)
	if err == nil || !errors.Is(err, rates.ErrMissing) || r.Upstream == nil {
		return v, err
	}
	v, err = r.Upstream.Rate(ctx, code, day)
	if err != nil {
		return nil, err
	}
	if err := r.Store.SaveRate(ctx, code, day, v, r.Name, false); err != nil {
		return nil, err
	}
	return r.Store.Rate(ctx, code, day) // what the table keeps, should another answer have been kept first
}
