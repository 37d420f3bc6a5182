package pspsim

import (
	"time"

	"github.com/onceflow/onceflow/sandbox/internal/notifier"
)

// Faults are the misbehaviours of dLocal's notifications (see
// notifier.Faults); Faults.TimeScale compresses dLocal's retry schedule.
type Faults = notifier.Faults

// dlocalSchedule is the wait before each retry of dLocal's notifications:
// hourly for 6 hours, then every 12 hours, 12 attempts in all.
var dlocalSchedule = []time.Duration{
	time.Hour, time.Hour, time.Hour, time.Hour, time.Hour, time.Hour,
	12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour,
}
