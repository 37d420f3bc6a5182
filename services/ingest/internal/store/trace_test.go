package store

import (
	"context"
	"testing"
)

// A receipt names its payment or refund by its event id (the dedupe key
// "<kind>:<event id>:<STATUS>"): the trace of that id shows the receipt
// before anything was applied from it, found by the prefix of the key.
func TestTraceFindsAReceiptByItsEventIDBeforeItIsApplied(t *testing.T) {
	t.Parallel()
	st, _ := groupEnv(t)
	ctx := context.Background()
	for _, key := range []string{"payment:p-unapplied:PAID", "refund:r-unapplied:SUCCEEDED", "event:evt_other"} {
		if _, err := st.InsertReceipt(ctx, NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: "psp", DedupeKey: key,
			EventID: key, EventType: "payment", Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		q, key string
	}{{"p-unapplied", "payment:p-unapplied:PAID"}, {"r-unapplied", "refund:r-unapplied:SUCCEEDED"}} {
		tr, err := st.Trace(ctx, c.q)
		if err != nil {
			t.Fatalf("trace %s: %v", c.q, err)
		}
		if len(tr.Receipts) != 1 {
			t.Errorf("trace %s: %d receipts, want the one keyed %s", c.q, len(tr.Receipts), c.key)
		}
	}
	for _, q := range []string{"p-unapp", "unapplied", "evt_other"} {
		if tr, err := st.Trace(ctx, q); err != nil || len(tr.Receipts) != 0 {
			t.Errorf("trace %s: %d receipts, %v; want none (no receipt's event id is %[1]q)", q, len(tr.Receipts), err)
		}
	}
}
