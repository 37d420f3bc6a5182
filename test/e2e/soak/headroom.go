package soak

import (
	"fmt"
	"math"
	"time"
)

// BusyShare is the share of the machine's cores past which a soak measures
// its machine rather than onceflow: near saturation, queues and contention
// move CPU a document and p99 by themselves from window to window (at 93 %
// of two cores, ±10 % and 280 to 1,095 ms).
const BusyShare = 0.75

// headroom judges window 1's load: the cores the machine kept busy at rate
// (machineMsPerDoc a document), and when that is past BusyShare of cpus, a
// line saying so with the rate that would keep two thirds of them if a
// document cost as much there: an upper bound, since the services batch
// less at a lower rate (on 2 cores, 11.08 ms a document at 140/s, 14.99 at
// 100/s), and how long the run's documents would take at it; "" when the
// machine has room.
func headroom(machineMsPerDoc float64, rate, cpus, documents int) string {
	busy := machineMsPerDoc * float64(rate) / 1000
	if machineMsPerDoc <= 0 || busy <= BusyShare*float64(cpus) {
		return ""
	}
	fit := int(math.Floor(2.0 / 3 * float64(cpus) * 1000 / machineMsPerDoc))
	took := (time.Duration(documents/max(fit, 1)) * time.Second).Round(time.Minute)
	return fmt.Sprintf("window 1 kept %.2f of %d cores busy at %d/s (%.2f ms a document): past %.0f %% of them the verdict says the machine, not onceflow; about -rate %d would keep two thirds busy if a document cost as much there, and it costs more (smaller batches): stop and start again below it (%d documents take %s or more there)",
		busy, cpus, rate, machineMsPerDoc, BusyShare*100, fit, documents, took)
}
