package main

import (
	"time"

	"github.com/onceflow/onceflow/sandbox/internal/server"
	"github.com/onceflow/onceflow/sandbox/pspsim"
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
func loadFaults(getenv func(string) string) (pspsim.Faults, error) {
	f := pspsim.Faults{Seed: 1, MaxCopies: 3, PendingFor: 2 * time.Second}
	p := server.NewEnvParser(getenv)
	p.Seed("PSP_SEED", &f.Seed)
	p.Rate("PSP_DUPLICATE_RATE", &f.DuplicateRate)
	p.Int("PSP_MAX_COPIES", 2, 100, &f.MaxCopies)
	p.Duration("PSP_DELAY_MAX", &f.DelayMax)
	p.Rate("PSP_LOSS_RATE", &f.LossRate)
	p.Rate("PSP_STALE_RATE", &f.StaleRate)
	p.Rate("PSP_PENDING_FIRST_RATE", &f.PendingFirstRate)
	p.Duration("PSP_PENDING_FOR", &f.PendingFor)
	p.Rate("PSP_TIME_SCALE", &f.TimeScale)
	return f, p.Err()
}
