package soak

import (
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// phaseMetric is the reconciler's histogram of each phase of a run, and
// passMetric its histogram of the sweep phase's two passes, read as the
// phases "sweep.recent" and "sweep.full".
const (
	phaseMetric = "onceflow_reconciler_phase_duration_seconds"
	passMetric  = "onceflow_reconciler_sweep_pass_duration_seconds"
)

// phaseTotal is one phase's histogram so far: seconds and runs.
type phaseTotal struct {
	seconds float64
	count   uint64
}

// readPhases reads the phase and pass histograms from the metrics page at
// url (the reconciler's admin /metrics). A page without them (no run
// finished yet) reads as no phases.
func readPhases(ctx context.Context, url string) (map[string]phaseTotal, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the reconciler's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read the reconciler's metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse the reconciler's metrics: %w", err)
	}
	out := map[string]phaseTotal{}
	addHistograms(out, families[phaseMetric], "phase", "")
	addHistograms(out, families[passMetric], "pass", "sweep.")
	return out, nil
}

// addHistograms adds to out each histogram of f under prefix and its value
// of label.
func addHistograms(out map[string]phaseTotal, f *dto.MetricFamily, label, prefix string) {
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[prefix+l.GetValue()] = phaseTotal{seconds: m.GetHistogram().GetSampleSum(), count: m.GetHistogram().GetSampleCount()}
			}
		}
	}
}

// phaseMeans is each phase's mean seconds over the runs between two
// readings of the histogram; a phase without a run between them is left
// out.
func phaseMeans(start, end map[string]phaseTotal) map[string]float64 {
	out := map[string]float64{}
	for name, e := range end {
		s := start[name]
		if e.count > s.count {
			out[name] = (e.seconds - s.seconds) / float64(e.count-s.count)
		}
	}
	return out
}
