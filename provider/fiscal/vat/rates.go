package vat

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/money"
)

// Rates are the VAT rates in force from a date, in basis points (1000 is
// 10 %).
type Rates struct {
	From      time.Time // a calendar date, UTC midnight
	MinimumBP int64
	BasicBP   int64
}

// Schedule is the VAT rates by effective date, oldest first.
type Schedule []Rates

// DefaultSchedule is Uruguay's rates since the 2007 tax reform: 10 %
// minimum and 22 % basic from 1 July 2007.
func DefaultSchedule() Schedule {
	return Schedule{{From: time.Date(2007, 7, 1, 0, 0, 0, 0, time.UTC), MinimumBP: 1000, BasicBP: 2200}}
}

// At returns the rates in force on day (its calendar date in its own
// location); false when day is before the first entry.
func (s Schedule) At(day time.Time) (Rates, bool) {
	d := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
	for i := len(s) - 1; i >= 0; i-- {
		if !s[i].From.After(d) {
			return s[i], true
		}
	}
	return Rates{}, false
}

// ParseSchedule reads "DATE:MIN:BASIC" entries separated by commas, e.g.
// "2007-07-01:10:22" (rates are percents with at most two decimals). The
// empty string is DefaultSchedule. The error names the bad entry.
func ParseSchedule(s string) (Schedule, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultSchedule(), nil
	}
	var out Schedule
	for _, entry := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(entry), ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("VAT rates entry %q: want DATE:MINIMUM:BASIC such as 2007-07-01:10:22", entry)
		}
		from, err := time.Parse("2006-01-02", parts[0])
		if err != nil {
			return nil, fmt.Errorf("VAT rates entry %q: date %q is not YYYY-MM-DD", entry, parts[0])
		}
		minimum, err1 := money.ParseMinor(parts[1])
		basic, err2 := money.ParseMinor(parts[2])
		if err1 != nil || err2 != nil || minimum <= 0 || basic <= 0 {
			return nil, fmt.Errorf("VAT rates entry %q: rates must be positive percents with at most two decimals", entry)
		}
		out = append(out, Rates{From: from, MinimumBP: minimum, BasicBP: basic})
	}
	slices.SortFunc(out, func(a, b Rates) int { return a.From.Compare(b.From) })
	for i := 1; i < len(out); i++ {
		if out[i].From.Equal(out[i-1].From) {
			return nil, fmt.Errorf("VAT rates: two entries from %s", out[i].From.Format("2006-01-02"))
		}
	}
	return out, nil
}

// Percent renders basis points as DGI writes a rate: 1000 → "10", 2250 →
// "22.5".
func Percent(bp int64) string {
	s := money.FormatMinor(bp)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
