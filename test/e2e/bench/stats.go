package bench

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Sample is what one measured stage saw: the operations that started and
// finished inside its measuring window, and their latencies.
type Sample struct {
	Window    time.Duration // the measuring window, warm-up excluded
	Latencies []float64     // milliseconds, ascending
}

// NewSample sorts the latencies (milliseconds) observed over window.
func NewSample(window time.Duration, latencies []float64) Sample {
	slices.Sort(latencies)
	return Sample{Window: window, Latencies: latencies}
}

// Pool joins samples of consecutive windows into one over their whole
// span.
func Pool(samples ...Sample) Sample {
	var window time.Duration
	var all []float64
	for _, s := range samples {
		window += s.Window
		all = append(all, s.Latencies...)
	}
	return NewSample(window, all)
}

// joinMillis writes latencies as "1.2, 3.4 ms"; a window that shed load
// (+Inf, or -1 as results.json holds it) as "shed".
func joinMillis(ms []float64) string {
	parts := make([]string, len(ms))
	for i, v := range ms {
		parts[i] = strconv.FormatFloat(v, 'f', 1, 64)
		if v < 0 || v > 1e300 {
			parts[i] = "shed"
		}
	}
	return strings.Join(parts, ", ") + " ms"
}

// joinRatios writes ratios as "0.61, 0.58".
func joinRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, v := range xs {
		parts[i] = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.Join(parts, ", ")
}

// Count is how many operations the sample holds.
func (s Sample) Count() int { return len(s.Latencies) }

// Rate is the operations per second over the window; 0 for an empty window.
func (s Sample) Rate() float64 {
	if s.Window <= 0 {
		return 0
	}
	return float64(len(s.Latencies)) / s.Window.Seconds()
}

// Quantile is the latency (milliseconds) at quantile p in [0, 1], the
// empirical (nearest-rank) estimate; 0 for an empty sample.
func (s Sample) Quantile(p float64) float64 {
	if len(s.Latencies) == 0 {
		return 0
	}
	return stat.Quantile(p, stat.Empirical, s.Latencies, nil)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
