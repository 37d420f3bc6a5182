// Package rates gives the value of a currency or unit in Uruguayan pesos
// on a date: the exchange rate a CFE in a foreign currency carries
// (TpoCambio) and the Unidad Indexada the e-Ticket threshold is counted in.
// Sources: the Banco Central del Uruguay's published web service (package
// bcu), a CSV file for offline use and tests (LoadFile), and the
// invoicer's own table (which asks BCU for what it lacks).
package rates

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"
	"time"
)

// UI is the code of the Unidad Indexada (ISO 4217 fund code UYI).
const UI = "UYI"

// ErrMissing means the source has no value for the code on that date;
// any other error means it could not be asked.
var ErrMissing = errors.New("no rate published")

// Source gives the UYU value of one unit of code (an ISO 4217 code such as
// USD, or UI) that applies on day (a calendar date, its location ignored).
type Source interface {
	Rate(ctx context.Context, code string, day time.Time) (*big.Rat, error)
}

// Day is day's calendar date at UTC midnight.
func Day(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }

// Memory is a source held in memory: values by code and date. A date
// without a value takes the latest earlier one up to Lookback days back
// (weekends and holidays have no rate of their own).
type Memory struct {
	values   map[string]map[time.Time]*big.Rat
	Lookback int
}

// NewMemory returns an empty Memory looking back 7 days.
func NewMemory() *Memory { return &Memory{values: map[string]map[time.Time]*big.Rat{}, Lookback: 7} }

// Set records code's value on day.
func (m *Memory) Set(code string, day time.Time, value *big.Rat) {
	if m.values[code] == nil {
		m.values[code] = map[time.Time]*big.Rat{}
	}
	m.values[code][Day(day)] = new(big.Rat).Set(value)
}

// Rate returns code's value on day or the latest of the Lookback days
// before; ErrMissing when there is none.
func (m *Memory) Rate(_ context.Context, code string, day time.Time) (*big.Rat, error) {
	d := Day(day)
	for i := 0; i <= m.Lookback; i++ {
		if v, ok := m.values[code][d.AddDate(0, 0, -i)]; ok {
			return new(big.Rat).Set(v), nil
		}
	}
	return nil, fmt.Errorf("%s on %s: %w", code, d.Format(time.DateOnly), ErrMissing)
}

// LoadFile reads a CSV file of "code,date,value" rows (e.g.
// "USD,2026-12-01,40.123" or "UYI,2026-12-01,6.4123"; a first row starting
// with "code" is a header) into a Memory. The error names the bad row.
func LoadFile(path string) (*Memory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Load(f)
}

// Load reads rows as LoadFile does from r.
func Load(r io.Reader) (*Memory, error) {
	rd := csv.NewReader(r)
	rd.FieldsPerRecord, rd.Comment = 3, '#'
	m := NewMemory()
	for n := 1; ; n++ {
		row, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, fmt.Errorf("rates row %d: %w", n, err)
		}
		if n == 1 && strings.EqualFold(strings.TrimSpace(row[0]), "code") {
			continue
		}
		code := strings.ToUpper(strings.TrimSpace(row[0]))
		day, err1 := time.Parse(time.DateOnly, strings.TrimSpace(row[1]))
		value, ok := new(big.Rat).SetString(strings.TrimSpace(row[2]))
		if len(code) != 3 || err1 != nil || !ok || value.Sign() <= 0 {
			return nil, fmt.Errorf("rates row %d: want CODE,YYYY-MM-DD,positive decimal", n)
		}
		m.Set(code, day, value)
	}
}

// Thousandths rounds v half up to thousandths (TpoCambio's precision):
// 40.1825 → 40183.
func Thousandths(v *big.Rat) int64 {
	x := new(big.Rat).Mul(v, big.NewRat(1000, 1))
	x.Add(x, big.NewRat(1, 2))
	return new(big.Int).Quo(x.Num(), x.Denom()).Int64()
}

// Each calls f with every value m holds.
func (m *Memory) Each(f func(code string, day time.Time, value *big.Rat)) {
	for code, days := range m.values {
		for day, v := range days {
			f(code, day, new(big.Rat).Set(v))
		}
	}
}
