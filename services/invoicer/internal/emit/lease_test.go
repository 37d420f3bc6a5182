package emit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

// hooked is the sandbox's client, running before ahead of every look-up
// (for each reference of a look-up made together) and beforeEmit ahead of
// every send; a send whose beforeEmit returns an error fails with it and
// never reaches the sandbox.
type hooked struct {
	*invoicy.Client
	before     func(ref string)
	beforeEmit func(ref string) error
	lookupErr  func() error // a look-up's error instead of the sandbox's answer, when not nil
}

func (h hooked) Lookup(ctx context.Context, ref string) ([]fiscal.Held, error) {
	if h.before != nil {
		h.before(ref)
	}
	if err := h.failLookup(); err != nil {
		return nil, err
	}
	return h.Client.Lookup(ctx, ref)
}

func (h hooked) LookupReferences(ctx context.Context, refs []string) ([]fiscal.Held, error) {
	for _, ref := range refs {
		if h.before != nil {
			h.before(ref)
		}
	}
	if err := h.failLookup(); err != nil {
		return nil, err
	}
	return h.Client.LookupReferences(ctx, refs)
}

func (h hooked) failLookup() error {
	if h.lookupErr == nil {
		return nil
	}
	return h.lookupErr()
}

func (h hooked) Emit(ctx context.Context, doc fiscal.Document) (fiscal.Held, error) {
	if h.beforeEmit != nil {
		if err := h.beforeEmit(doc.Reference); err != nil {
			return fiscal.Held{}, err
		}
	}
	return h.Client.Emit(ctx, doc)
}

// hookedWorker is a worker whose provider is h over the sandbox's client.
func hookedWorker(tb testing.TB, env *invoicertest.Env, cfg emit.Config, h hooked) worker {
	tb.Helper()
	reg := prometheus.NewRegistry()
	h.Client = env.Client(tb, 5*time.Second)
	return worker{Emitter: emit.New(env.Store, h, zaptest.NewLogger(tb), reg, cfg), reg: reg}
}

func TestBatchRenewsLeasesOnlyWhenTheClaimIsOld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		lease, calls time.Duration // Config.Lease, Config.CallTimeout
		pause        time.Duration // spent in the first document's send
		renewed      bool          // the later documents were sent under a renewed lease
	}{
		{name: "fast batch works under the claim's lease", lease: 10 * time.Second},
		{name: "renewed once a third of the lease has run", lease: 1500 * time.Millisecond, pause: 600 * time.Millisecond, renewed: true},
		{name: "renewed sooner to leave a look-up and a send", lease: 1500 * time.Millisecond, calls: 600 * time.Millisecond,
			pause: 400 * time.Millisecond, renewed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := invoicertest.New(t)
			for i := range 3 {
				env.Record(t, invoicertest.Payment(fmt.Sprint("pay-lease-", i), 100_00, false))
			}
			var looked int
			var leases []time.Time // each document's lease expiry as it is sent
			cfg := fast(t)
			cfg.Lease, cfg.CallTimeout = tc.lease, tc.calls
			w := hookedWorker(t, env, cfg, hooked{before: func(string) { looked++ }, beforeEmit: func(ref string) error {
				leases = append(leases, *env.Document(t, ref).LeaseExpiresAt)
				if len(leases) == 1 {
					time.Sleep(tc.pause)
				}
				return nil
			}})

			if n, err := w.Round(context.Background()); err != nil || n != 3 {
				t.Fatalf("round claimed %d (%v), want 3", n, err)
			}
			if n := env.Sandbox.Stats().Emits; n != 3 || len(leases) != 3 || looked != 3 {
				t.Fatalf("%d sends (%d seen) after %d look-ups, want 3 of each", n, len(leases), looked)
			}
			// The send marker gave all three the same lease; a later one is
			// a renewal.
			for i, l := range leases[1:] {
				if renewed := l.After(leases[0]); renewed != tc.renewed || (!renewed && !l.Equal(leases[0])) {
					t.Errorf("document %d sent under a lease to %s, the first under %s; want renewed=%v",
						i+2, l.Format(time.StampMicro), leases[0].Format(time.StampMicro), tc.renewed)
				}
			}
		})
	}
}

func TestDocumentWhoseClaimWasLostIsNotSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lease  time.Duration
		pause  time.Duration // spent in the first document's look-up, or its send
		inSend bool          // the claim is lost during the first document's send, after the marker
	}{
		{name: "fresh claim: fenced at the send marker", lease: 10 * time.Second},
		{name: "old claim: fenced at the send marker", lease: 900 * time.Millisecond, pause: 400 * time.Millisecond},
		{name: "old marker: the renewal before the send finds it lost", lease: 900 * time.Millisecond, pause: 400 * time.Millisecond, inSend: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := invoicertest.New(t)
			first := env.Record(t, invoicertest.Payment("pay-kept", 100_00, false))
			lost := env.Record(t, invoicertest.Payment("pay-lost", 100_00, false))
			other := uuid.New() // another worker's token
			cfg := fast(t)
			cfg.Lease = tc.lease
			// While the first document is worked, the second is taken from
			// this worker.
			take := func(ref string) {
				if ref != first.Reference {
					return
				}
				if _, err := env.Pool.Exec(context.Background(), "UPDATE invoicer.fiscal_documents SET lease_token = $1 WHERE id = $2", other, lost.ID); err != nil {
					t.Error(err)
				}
				time.Sleep(tc.pause)
			}
			h := hooked{before: take}
			if tc.inSend {
				h = hooked{beforeEmit: func(ref string) error { take(ref); return nil }}
			}
			w := hookedWorker(t, env, cfg, h)

			if n, err := w.Round(context.Background()); err != nil || n != 2 {
				t.Fatalf("round claimed %d (%v), want 2", n, err)
			}
			if got := env.Document(t, first.Reference); got.Status != fiscal.StatusAuthorized {
				t.Fatalf("the document still held is %s, want authorized", got.Status)
			}
			got := env.Document(t, lost.Reference)
			if n := env.Sandbox.CountByReference(lost.Reference); n != 0 || env.Sandbox.Stats().Emits != 1 {
				t.Fatalf("%d documents at the sandbox for the lost claim (%d sends in all), want none (1)", n, env.Sandbox.Stats().Emits)
			}
			// Taken after its marker, it keeps it: whoever holds it now
			// treats its send as possibly made, never as unsent.
			if got.Status != fiscal.StatusPending || (got.UnknownSince != nil) != tc.inSend || got.LeaseToken == nil || *got.LeaseToken != other {
				t.Fatalf("lost document is %s, unknown since %v, token %v; want it untouched but for a marker made before it was taken: pending, marker %v, the other token",
					got.Status, got.UnknownSince, got.LeaseToken, tc.inSend)
			}
		})
	}
}
