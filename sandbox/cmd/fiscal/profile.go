package main

import (
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// loadProfile reads the seeded fault profile from the environment; every
// variable is optional and unset means no fault:
//
//	FISCAL_SEED              uint, seeds the draws (default 1)
//	FISCAL_LATENCY_MAX       each request waits up to this long
//	FISCAL_FAIL_RATE         0–1, chance of HTTP 503 before acting
//	FISCAL_HANG_RATE         0–1, chance the document is stored and the answer held
//	FISCAL_HANG_FOR          how long a held answer waits (default: until the client gives up)
//	FISCAL_DUPLICATE_RATE    0–1, chance a document is stored twice
//	FISCAL_PENDING_RATE      0–1, chance DGI answers pending for 1..FISCAL_PENDING_POLLS_MAX queries (default 3)
//	FISCAL_REJECT_RATE       0–1, chance DGI rejects the document
func loadProfile(getenv func(string) string) (fiscalsim.Profile, error) {
	prof := fiscalsim.Profile{Seed: 1, PendingPollsMax: 3}
	p := server.NewEnvParser(getenv)
	p.Seed("FISCAL_SEED", &prof.Seed)
	p.Duration("FISCAL_LATENCY_MAX", &prof.LatencyMax)
	p.Rate("FISCAL_FAIL_RATE", &prof.FailRate)
	p.Rate("FISCAL_HANG_RATE", &prof.HangRate)
	p.Duration("FISCAL_HANG_FOR", &prof.HangFor)
	p.Rate("FISCAL_DUPLICATE_RATE", &prof.DuplicateRate)
	p.Rate("FISCAL_PENDING_RATE", &prof.PendingRate)
	p.Int("FISCAL_PENDING_POLLS_MAX", 1, 1000, &prof.PendingPollsMax)
	p.Rate("FISCAL_REJECT_RATE", &prof.RejectRate)
	return prof, p.Err()
}
