package bench

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/backoff"
)

// Op is one operation of a load: a webhook delivery or a receipt insert. An
// error stops the stage: a benchmark that counts failures as work would lie.
type Op func(context.Context) error

// ClosedLoop runs op back to back on workers goroutines for warmup plus
// window, and keeps the operations that started after the warm-up and
// finished inside the window. The offered load adapts to the server: the
// throughput figure.
func ClosedLoop(ctx context.Context, workers int, warmup, window time.Duration, op Op) (Sample, error) {
	from := time.Now().Add(warmup)
	to := from.Add(window)
	latencies := make([][]float64, workers)
	g, gctx := errgroup.WithContext(ctx)
	for w := range workers {
		g.Go(func() error {
			for {
				began := time.Now()
				if !began.Before(to) {
					return nil
				}
				if err := op(gctx); err != nil {
					return err
				}
				if ended := time.Now(); !began.Before(from) && !ended.After(to) {
					latencies[w] = append(latencies[w], millis(ended.Sub(began)))
				}
			}
		})
	}
	err := g.Wait()
	var all []float64
	for _, l := range latencies {
		all = append(all, l...)
	}
	return NewSample(window, all), err
}

// OpenLoop starts op rate times a second on a fixed schedule for warmup
// plus window, whatever the answers take, and measures each operation from
// the moment it was due, so a slow server cannot hide its queueing delay by
// slowing the load (coordinated omission). Operations due in the window are
// kept. lag is how late each one started: the generator's own share of the
// latency, when the machine it shares with the server is busy.
func OpenLoop(ctx context.Context, rate int, warmup, window time.Duration, op Op) (latency, lag Sample, err error) {
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	var (
		mu              sync.Mutex
		latencies, lags []float64
	)
	g, gctx := errgroup.WithContext(ctx)
	for due := start; due.Before(start.Add(warmup + window)); due = due.Add(interval) {
		if !backoff.Sleep(gctx, time.Until(due)) {
			break
		}
		measured := !due.Before(start.Add(warmup))
		g.Go(func() error {
			late := millis(time.Since(due))
			if err := op(gctx); err != nil {
				return err
			}
			if measured {
				l := millis(time.Since(due))
				mu.Lock()
				latencies, lags = append(latencies, l), append(lags, late)
				mu.Unlock()
			}
			return nil
		})
	}
	err = g.Wait()
	return NewSample(window, latencies), NewSample(window, lags), err
}
