package invoicy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	ok := Config{BaseURL: "https://appuypruebas.migrate.info/InvoiCy/", EmpCodigo: "a", EmpPK: "b", AccessKey: "c"}
	tests := []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"valid", func(*Config) {}, ""},
		{"no base", func(c *Config) { c.BaseURL = "" }, "BaseURL"},
		{"relative base", func(c *Config) { c.BaseURL = "InvoiCy/" }, "BaseURL"},
		{"ftp base", func(c *Config) { c.BaseURL = "ftp://x/" }, "BaseURL"},
		{"no EmpCodigo", func(c *Config) { c.EmpCodigo = "" }, "EmpCodigo"},
		{"no EmpPK", func(c *Config) { c.EmpPK = "" }, "EmpPK"},
		{"no AccessKey", func(c *Config) { c.AccessKey = "" }, "AccessKey"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout"},
		{"empty status", func(c *Config) { c.StatusMap = map[string]fiscal.Status{"5": ""} }, "StatusMap"},
		{"negative rate", func(c *Config) { c.RatePerSecond = -1 }, "RatePerSecond"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := ok
			tt.change(&cfg)
			c, err := New(cfg, nil)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if c.timeout != DefaultTimeout || c.base != "https://appuypruebas.migrate.info/InvoiCy" {
					t.Errorf("defaults: timeout %s, base %s", c.timeout, c.base)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("New = %v, want an error naming %s", err, tt.field)
			}
		})
	}
}

func invoice() fiscal.Document {
	return fiscal.Document{
		Reference:  fiscal.Reference("payment", "D-4-abc", fiscal.KindInvoice),
		Type:       fiscal.ETicket,
		IssueDate:  day(2026, 11, 30),
		Currency:   "UYU",
		TotalMinor: 122000,
		Lines:      []fiscal.Line{{Description: "Plan", Quantity: 1, UnitMinor: 122000, AmountMinor: 122000}},
		Addendum:   fiscal.Addendum("payment", "D-4-abc", fiscal.KindInvoice),
	}
}

// heldFor is what a well-behaved provider answers for doc.
func heldFor(doc fiscal.Document, status string) fiscal.Held {
	return fiscal.Held{
		Reference: doc.Reference, Type: doc.Type, Series: "A", Number: 7, ProviderStatus: status,
		SecurityCode: "a1B2c3", CAEID: "90123", VerifyURL: "https://example.test/qr", TotalMinor: doc.TotalMinor,
		Currency: doc.Currency, Addendum: doc.Addendum, IssueDate: doc.IssueDate,
	}
}

func TestEmitSuccess(t *testing.T) {
	t.Parallel()
	doc := invoice()
	other := heldFor(doc, "5")
	other.Reference = "1"
	f, srv := newFake(t, func(tb testing.TB, path, business string) (int, string) {
		if path != opEmit.path || !strings.Contains(business, "<CFENumReferencia>"+doc.Reference+"</CFENumReferencia>") {
			tb.Errorf("unexpected request to %s", path)
		}
		return http.StatusOK, retornoXML("EnvioCFERetorno", 0, other, heldFor(doc, "4"))
	})
	got, err := newTestClient(t, srv.URL, time.Second).Emit(t.Context(), doc)
	if err != nil {
		t.Fatalf("Emit: %v", err)
	}
	want := heldFor(doc, "4")
	want.Status = fiscal.StatusPendingDGI
	if got != want {
		t.Fatalf("Emit\n got %+v\nwant %+v", got, want)
	}
	if f.count() != 1 {
		t.Errorf("%d requests, want 1", f.count())
	}
}

// TestEmitOutcomes drives Emit against answers that must be told apart:
// ambiguous ones (look up before any resend) and refusals (nothing stored).
func TestEmitOutcomes(t *testing.T) {
	t.Parallel()
	doc := invoice()
	reply := func(status int, ret string) http.HandlerFunc {
		f := &fakeInvoiCy{tb: t, reply: func(testing.TB, string, string) (int, string) { return status, ret }}
		return f.ServeHTTP
	}
	foreign := heldFor(doc, "5")
	foreign.Reference = "1"
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    error
	}{
		{"http 500", reply(500, ""), fiscal.ErrAmbiguous},
		{"http 503 soap fault", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(503)
			_, _ = io.WriteString(w, `<Envelope><Body><Fault><faultcode>Server</faultcode></Fault></Body></Envelope>`)
		}, fiscal.ErrAmbiguous},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, fiscal.ErrAmbiguous},
		{"hangs past timeout", func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, fiscal.ErrAmbiguous},
		{"connection dropped after request", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.(*net.TCPConn).SetLinger(0) // reset
				_ = conn.Close()
			}
		}, fiscal.ErrAmbiguous},
		{"garbage 200", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "<html><body>gateway says hi")
		}, fiscal.ErrAmbiguous},
		{"MsgCod 0 without documents", reply(200, retornoXML("EnvioCFERetorno", 0)), fiscal.ErrAmbiguous},
		{"answer for another reference", reply(200, retornoXML("EnvioCFERetorno", 0, foreign)), fiscal.ErrAmbiguous},
		{"malformed document", reply(200, strings.Replace(retornoXML("EnvioCFERetorno", 0, heldFor(doc, "5")),
			"<CFETotMntPagar>1220.00", "<CFETotMntPagar>1.220,00", 1)), fiscal.ErrAmbiguous},
		{"MsgCod 1", reply(200, retornoXML("EnvioCFERetorno", 1)), fiscal.ErrRefused},
		{"http 408", reply(408, ""), fiscal.ErrAmbiguous},
		{"http 499", reply(499, ""), fiscal.ErrAmbiguous},
		{"http 400", reply(400, ""), fiscal.ErrRefused},
		{"http 401", reply(401, ""), fiscal.ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			_, err := newTestClient(t, srv.URL, 300*time.Millisecond).Emit(t.Context(), doc)
			checkKind(t, err, tt.want)
			if !strings.HasPrefix(err.Error(), "invoicy emit "+doc.Reference+": ") {
				t.Errorf("error lacks context: %v", err)
			}
		})
	}
}

func checkKind(tb testing.TB, err, want error) {
	tb.Helper()
	if !errors.Is(err, want) {
		tb.Fatalf("err = %v, want %v", err, want)
	}
	if errors.Is(err, fiscal.ErrAmbiguous) == errkind.Is(err, errkind.Refused) {
		tb.Fatalf("err = %v: must be exactly one of ambiguous or refused", err)
	}
}

func TestEmitRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, func(tb testing.TB, _, _ string) (int, string) {
		tb.Error("request reached the provider")
		return 500, ""
	})
	c := newTestClient(t, srv.URL, time.Second)

	bad := invoice()
	bad.TotalMinor = -1
	_, err := c.Emit(t.Context(), bad)
	checkKind(t, err, fiscal.ErrRefused)
	if !errors.Is(err, fiscal.ErrInvalidDocument) {
		t.Errorf("invalid document error lost: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Emit(ctx, invoice())
	checkKind(t, err, fiscal.ErrRefused)

	// A port nobody listens on: the dial fails, nothing was sent.
	_, err = newTestClient(t, "http://"+refusingAddr(t), time.Second).Emit(t.Context(), invoice())
	checkKind(t, err, fiscal.ErrRefused)

	if f.count() != 0 {
		t.Errorf("%d requests reached the provider", f.count())
	}
}

// refusingAddr returns a loopback address that refuses connections until
// the test ends: a socket bound to it without listening (and without
// SO_REUSEADDR, so no other process can listen there meanwhile), where a
// closed listener's port could be taken by anyone.
func refusingAddr(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

func TestLookup(t *testing.T) {
	t.Parallel()
	doc := invoice()
	held := heldFor(doc, "7")
	theirs := heldFor(doc, "5")
	theirs.Addendum = "something else"
	answers := map[string][]fiscal.Held{
		doc.Reference: {held},
		"2":           {held, theirs},
	}
	f, srv := newFake(t, func(tb testing.TB, path, business string) (int, string) {
		if !strings.Contains(business, "<FechaIni></FechaIni>") {
			tb.Errorf("look-up sends a period: %s", business)
		}
		ref := strings.TrimSuffix(strings.TrimPrefix(between(business, "<CFENumReferencia>", "</CFENumReferencia>"),
			"<CFENumReferencia>"), "</CFENumReferencia>")
		if ref == "500" {
			return 500, ""
		}
		return 200, retornoXML("ConsultaCFERetorno", 0, answers[ref]...)
	})
	c := newTestClient(t, srv.URL, time.Second)

	got, err := c.Lookup(t.Context(), doc.Reference)
	if err != nil || len(got) != 1 {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
	if v, h, _ := fiscal.Classify(doc, got); v != fiscal.VerdictAdopt || h.Status != fiscal.StatusAuthorized {
		t.Errorf("Classify = %s, %+v", v, h)
	}
	if got, err := c.Lookup(t.Context(), "2"); err != nil || len(got) != 2 {
		t.Errorf("Lookup(2) = %+v, %v", got, err)
	}
	if got, err := c.Lookup(t.Context(), "3"); err != nil || got != nil {
		t.Errorf("Lookup(3) = %+v, %v; want nothing held", got, err)
	}
	if _, err := c.Lookup(t.Context(), "500"); err == nil || !strings.HasPrefix(err.Error(), "invoicy lookup 500: ") {
		t.Errorf("Lookup(500) = %v, want an error", err)
	}
	before := f.count()
	if _, err := c.Lookup(t.Context(), "0123"); err == nil {
		t.Error("malformed reference accepted")
	}
	if f.count() != before {
		t.Error("malformed reference was sent")
	}
}

func TestListNumbers(t *testing.T) {
	t.Parallel()
	doc := invoice()
	f, srv := newFake(t, func(tb testing.TB, _, business string) (int, string) {
		want := "<TipoCFE>101</TipoCFE><FechaIni>2026-11-30</FechaIni><FechaFin>2026-11-30</FechaFin>" +
			"<CFEsFaixa><CFENroIni>7</CFENroIni><CFENroFin>9</CFENroFin></CFEsFaixa>"
		if !strings.Contains(business, want) || strings.Contains(business, "CFEsEspecificos") {
			tb.Errorf("number range filter: %s", business)
		}
		return 200, retornoXML("ConsultaCFERetorno", 0, heldFor(doc, "5"))
	})
	c := newTestClient(t, srv.URL, time.Second)
	got, err := c.ListNumbers(t.Context(), day(2026, 11, 30).Add(23*time.Hour), fiscal.ETicket, 7, 9)
	if err != nil || len(got) != 1 || got[0].Reference != doc.Reference {
		t.Fatalf("ListNumbers = %+v, %v", got, err)
	}
	for _, r := range [][2]int64{{0, 9}, {9, 7}} {
		if _, err := c.ListNumbers(t.Context(), day(2026, 11, 30), fiscal.ETicket, r[0], r[1]); !errors.Is(err, fiscal.ErrRefused) {
			t.Errorf("numbers %d..%d: %v, want refused", r[0], r[1], err)
		}
	}
	if f.count() != 1 {
		t.Errorf("%d requests, want 1 (bad ranges are not sent)", f.count())
	}
}

func TestListPeriod(t *testing.T) {
	t.Parallel()
	doc := invoice()
	f, srv := newFake(t, func(tb testing.TB, _, business string) (int, string) {
		if strings.Contains(business, "CFEsEspecificos") ||
			!strings.Contains(business, "<FechaIni>2026-11-01</FechaIni><FechaFin>2026-11-30</FechaFin>") {
			tb.Errorf("period filter: %s", business)
		}
		return 200, retornoXML("ConsultaCFERetorno", 0, heldFor(doc, "5"), heldFor(doc, "3"))
	})
	c := newTestClient(t, srv.URL, time.Second)
	got, err := c.ListPeriod(t.Context(), day(2026, 11, 1), day(2026, 11, 30).Add(23*time.Hour))
	if err != nil || len(got) != 2 || got[1].Status != fiscal.StatusRejected {
		t.Fatalf("ListPeriod = %+v, %v", got, err)
	}
	if _, err := c.ListPeriod(t.Context(), day(2026, 11, 2), day(2026, 11, 1)); err == nil {
		t.Error("reversed period accepted")
	}
	if f.count() != 1 {
		t.Errorf("%d requests, want 1", f.count())
	}
}

func TestRateLimitSpacesCalls(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, func(testing.TB, string, string) (int, string) {
		return http.StatusOK, retornoXML("ConsultaCFERetorno", 0)
	})
	c, err := New(Config{BaseURL: srv.URL, EmpCodigo: testEmpCodigo, EmpPK: testEmpPK, AccessKey: testAccessKey, RatePerSecond: 1, Burst: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Lookup(ctx, "123"); err != nil {
		t.Fatalf("first look-up: %v", err)
	}
	// The second call would need a token a second later than the deadline
	// allows: it is refused without reaching the provider, as unavailable
	// (no refusal of the document).
	if _, err := c.Lookup(ctx, "123"); !errkind.Is(err, errkind.Refused) || !errors.Is(err, fiscal.ErrUnavailable) || f.count() != 1 {
		t.Fatalf("second look-up: %v after %d calls; want refused as unavailable with one call made", err, f.count())
	}
}

func TestLookupReferences(t *testing.T) {
	t.Parallel()
	doc := invoice()
	held := heldFor(doc, "7")
	_, srv := newFake(t, func(tb testing.TB, path, business string) (int, string) {
		if n := strings.Count(business, "<CFEsEspecificosItem>"); n != 3 || !strings.Contains(business, "<FechaIni></FechaIni>") {
			tb.Errorf("look-up of 3 references sends %d items or a period: %s", n, business)
		}
		return 200, retornoXML("ConsultaCFERetorno", 0, held)
	})
	c := newTestClient(t, srv.URL, time.Second)
	got, err := c.LookupReferences(t.Context(), []string{doc.Reference, "2", "3"})
	if err != nil || len(got) != 1 || got[0].Reference != doc.Reference {
		t.Fatalf("LookupReferences = %+v, %v; want the one held", got, err)
	}
	if got, err := c.LookupReferences(t.Context(), nil); err != nil || got != nil {
		t.Errorf("LookupReferences(none) = %+v, %v; want nothing asked", got, err)
	}
	if _, err := c.LookupReferences(t.Context(), []string{"2", "x"}); !errors.Is(err, fiscal.ErrRefused) {
		t.Errorf("LookupReferences with a malformed reference = %v, want refused", err)
	}
}
