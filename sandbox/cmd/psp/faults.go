package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/sandbox/psp"
)

// loadFaults reads the notification faults from the environment; every
// variable is optional and unset means no fault:
//
//	PSP_SEED                uint, seeds the faults (default 1)
//	PSP_DUPLICATE_RATE      0–1, chance a notification is sent 2..PSP_MAX_COPIES times
//	PSP_MAX_COPIES          copies of a duplicated notification (default 3)
//	PSP_DELAY_MAX           each copy waits up to this long
//	PSP_LOSS_RATE           0–1, chance a notification is never sent
//	PSP_STALE_RATE          0–1, chance a stale PENDING follows a PAID
//	PSP_PENDING_FIRST_RATE  0–1, chance a payment starts PENDING, PAID PSP_PENDING_FOR later (default 2s)
//	PSP_TIME_SCALE          factor on dLocal's retry schedule, e.g. 0.000278 (an hour is a second)
func loadFaults(getenv func(string) string) (psp.Faults, error) {
	f := psp.Faults{Seed: 1, MaxCopies: 3, PendingFor: 2 * time.Second}
	for _, r := range []struct {
		name string
		dst  *float64
		max  float64
	}{
		{"PSP_DUPLICATE_RATE", &f.DuplicateRate, 1}, {"PSP_LOSS_RATE", &f.LossRate, 1},
		{"PSP_STALE_RATE", &f.StaleRate, 1}, {"PSP_PENDING_FIRST_RATE", &f.PendingFirstRate, 1},
		{"PSP_TIME_SCALE", &f.TimeScale, 1},
	} {
		if v := getenv(r.name); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 || x > r.max {
				return psp.Faults{}, fmt.Errorf("%s %q: want a number from 0 to %g", r.name, v, r.max)
			}
			*r.dst = x
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"PSP_DELAY_MAX", &f.DelayMax}, {"PSP_PENDING_FOR", &f.PendingFor}} {
		if v := getenv(d.name); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x < 0 {
				return psp.Faults{}, fmt.Errorf("%s %q: want a Go duration such as 500ms", d.name, v)
			}
			*d.dst = x
		}
	}
	if v := getenv("PSP_MAX_COPIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > 100 {
			return psp.Faults{}, fmt.Errorf("PSP_MAX_COPIES %q: want 2 to 100", v)
		}
		f.MaxCopies = n
	}
	if v := getenv("PSP_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return psp.Faults{}, fmt.Errorf("PSP_SEED %q: want an unsigned integer", v)
		}
		f.Seed = n
	}
	return f, nil
}
