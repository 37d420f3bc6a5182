package admin_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/admin"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

// An operator who adopts the provider's document for a needs_attention one
// and finds DGI rejected it gets a document_rejected case, as the emitter
// would have opened, so the document can be re-issued: without it the
// money ends in a rejected document no action can fix (seen in the chaos
// run: a duplicated and rejected credit note).
func TestAdoptingARejectedDocumentOpensItsCase(t *testing.T) {
	t.Parallel()
	k := newCaseKit(t)
	client := k.env.Client(t, 5*time.Second)
	srv := httpserver.New(zaptest.NewLogger(t), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	admin.New(k.env.Store, client.Lookup, zaptest.NewLogger(t), nil).Register(srv.Admin("tok"))
	k.e = srv.AdminEcho()
	d := k.env.Record(t, invoicertest.Payment("pay-adopt-rejected", 300_00, false))
	k.env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{Duplicate: true, Reject: true})
	if d = k.until(t, d.Reference, final); d.Status != fiscal.StatusNeedsAttention {
		t.Fatalf("document %s, want needs_attention (the provider holds two)", d.Status)
	}
	held, err := client.Lookup(context.Background(), d.Reference)
	if err != nil || len(held) != 2 {
		t.Fatalf("look-up: %+v, %v; want two documents", held, err)
	}
	c := k.theCase(t, cases.NeedsAttention)
	body := `{"action":"adopt","actor":"ana","reason":"voided the other","series":"` + held[0].Series + `","number":` + strconv.FormatInt(held[0].Number, 10) + `}`
	if code := k.resolve(t, c.ID, body, nil); code != http.StatusOK {
		t.Fatalf("adopt: %d", code)
	}
	if got := k.env.Document(t, d.Reference); got.Status != fiscal.StatusRejected {
		t.Fatalf("document %s after adopting a rejected one, want rejected", got.Status)
	}
	rejected := k.theCase(t, cases.DocumentRejected)
	if code := k.resolve(t, rejected.ID, `{"action":"reissue","actor":"ana","reason":"corrected"}`, nil); code != http.StatusOK {
		t.Fatalf("reissue: %d", code)
	}
}
