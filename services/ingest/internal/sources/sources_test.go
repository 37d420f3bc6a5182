package sources

import (
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/webhooksig"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestParseAppliesDefaults(t *testing.T) {
	srcs, err := Parse([]byte(`
sources:
  - {name: dlocal, kind: psp, scheme: dlocal, login: env:L, secrets: [env:S]}
  - {name: stripe, kind: generic, scheme: stripe, secrets: [whsec_0123456789abcdef]}
  - {name: invoicy, kind: fiscal_provider, scheme: standard, secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], max_body_bytes: 4096, tolerance: 2m}
`), env(map[string]string{"L": "login", "S": "secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 3 {
		t.Fatalf("got %d sources", len(srcs))
	}
	dl, st, inv := srcs[0], srcs[1], srcs[2]
	if d, ok := dl.Verifier.(webhooksig.DLocal); !ok || d.Login != "login" || d.Secrets[0] != "secret" || d.Tolerance != 0 {
		t.Fatalf("dlocal verifier = %#v, want login and secret from the environment, no tolerance", dl.Verifier)
	}
	if s, ok := st.Verifier.(webhooksig.Timestamped); !ok || s.Header != "Stripe-Signature" || s.Tolerance != DefaultTolerance {
		t.Fatalf("stripe verifier = %#v", st.Verifier)
	}
	if dl.Scope != "dlocal" || dl.MaxBytes != DefaultMaxBytes || inv.MaxBytes != 4096 || inv.Kind != webhook.KindFiscalProvider {
		t.Fatalf("defaults not applied: %+v %+v", dl, inv)
	}
	if scopes, err := PSPScopes(srcs); err != nil || len(scopes) != 1 || scopes["dlocal"] != "dlocal" || dl.PSP != "dlocal" {
		t.Fatalf("PSPScopes = %v, %v; PSP %q", scopes, err, dl.PSP)
	}
}

func TestBadFilesNameTheSourceAndField(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", `sources: [{name: a, kind: generic, scheme: stripe, secrets: [x], secret: y}]`, "field secret not found"},
		{"no sources", `sources: []`, "want at least one source"},
		{"bad name", `sources: [{name: "A B", kind: generic, scheme: stripe, secrets: [x]}]`, `source "A B" (#1): name`},
		{"bad kind", `sources: [{name: a, kind: bank, scheme: stripe, secrets: [x]}]`, `source "a" (#1): kind`},
		{"bad scheme", `sources: [{name: a, kind: generic, scheme: md5, secrets: [x]}]`, `source "a" (#1): scheme`},
		{"no secrets", `sources: [{name: a, kind: generic, scheme: stripe}]`, `source "a" (#1): secrets`},
		{"empty env secret", `sources: [{name: a, kind: generic, scheme: stripe, secrets: [x, env:MISSING]}]`, `source "a" (#1): secrets[1]: environment variable MISSING is empty`},
		{"standard secret not base64", `sources: [{name: a, kind: generic, scheme: standard, secrets: ["whsec_!!"]}]`, `source "a" (#1): secrets`},
		{"timestamped without header", `sources: [{name: a, kind: generic, scheme: timestamped, secrets: [x]}]`, `source "a" (#1): header`},
		{"bad tolerance", `sources: [{name: a, kind: generic, scheme: stripe, secrets: [x], tolerance: soon}]`, `source "a" (#1): tolerance`},
		{"body limit too big", `sources: [{name: a, kind: generic, scheme: stripe, secrets: [x], max_body_bytes: 99999999}]`, `source "a" (#1): max_body_bytes`},
		{"bad dedupe", `sources: [{name: a, kind: generic, scheme: stripe, secrets: [x], dedupe: "query:id"}]`, `source "a" (#1): dedupe`},
		{"psp with another scheme", `sources: [{name: a, kind: psp, scheme: stripe, secrets: [x], dedupe: dlocal}]`, `source "a" (#1): scheme`},
		{"psp with another dedupe", `sources: [{name: a, kind: psp, psp: dlocal, login: l, secrets: [x], dedupe: "body:id"}]`, `source "a" (#1): dedupe`},
		{"bad chargeback rule", `sources: [{name: a, kind: psp, login: l, secrets: [x], chargeback: refund}]`, `source "a" (#1): chargeback`},
		{"chargeback on a generic source", `sources: [{name: a, kind: generic, scheme: stripe, secrets: [x], chargeback: case}]`, `source "a" (#1): psp, chargeback`},
		{"unknown psp", `sources: [{name: a, kind: psp, psp: paypal, secrets: [x]}]`, `source "a" (#1): psp`},
		{"psp on a generic source", `sources: [{name: a, kind: generic, psp: dlocal, scheme: stripe, secrets: [x]}]`, `source "a" (#1): psp`},
		{"dlocal rule off a psp", `sources: [{name: a, kind: generic, scheme: dlocal, login: l, secrets: [x], dedupe: dlocal}]`, `source "a" (#1): dedupe`},
		{"dlocal without login", `sources: [{name: a, kind: psp, scheme: dlocal, secrets: [x]}]`, `source "a" (#1): login`},
		{"duplicate name", "sources:\n - {name: a, kind: generic, scheme: stripe, secrets: [whsec_0123456789abcdef]}\n - {name: a, kind: generic, scheme: stripe, secrets: [whsec_0123456789abcdef]}", `source "a" (#2): name: used twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestPSPSourcesMustShareAScope(t *testing.T) {
	srcs, err := Parse([]byte(`
sources:
  - {name: a, kind: psp, scheme: dlocal, login: l, secrets: [s]}
  - {name: b, kind: psp, scheme: dlocal, login: l, secrets: [s]}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PSPScopes(srcs); err == nil || !strings.Contains(err.Error(), `source "b"`) {
		t.Fatalf("PSPScopes = %v, want an error naming source b", err)
	}
}

// The new form names the PSP and may leave scheme and dedupe to it; the
// old form (kind psp, scheme dlocal) is the same source.
func TestPSPFieldAndOldFormAgree(t *testing.T) {
	srcs, err := Parse([]byte(`
sources:
  - {name: new, kind: psp, psp: dlocal, login: l, secrets: [s], dedupe_scope: dl}
  - {name: old, kind: psp, scheme: dlocal, login: l, secrets: [s], dedupe_scope: dl}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		if _, ok := s.Verifier.(webhooksig.DLocal); !ok || s.PSP != "dlocal" || s.Scope != "dl" {
			t.Fatalf("source %s: PSP %q, scope %q, verifier %T", s.Name, s.PSP, s.Scope, s.Verifier)
		}
	}
	if scopes, err := PSPScopes(srcs); err != nil || scopes["dlocal"] != "dl" {
		t.Fatalf("PSPScopes = %v, %v", scopes, err)
	}
}

func TestFromEnvWithoutFileServesDLocal(t *testing.T) {
	srcs, err := FromEnv("", env(map[string]string{"DLOCAL_LOGIN": "l", "DLOCAL_SECRET_KEY": "s"}))
	if err != nil || len(srcs) != 1 || srcs[0].Name != "dlocal" || srcs[0].Kind != webhook.KindPSP {
		t.Fatalf("FromEnv = %+v, %v", srcs, err)
	}
	if _, err := FromEnv("/nonexistent/sources.yaml", env(nil)); err == nil || !strings.Contains(err.Error(), "INGEST_WEBHOOK_SOURCES_FILE") {
		t.Fatalf("missing file: %v, want an error naming INGEST_WEBHOOK_SOURCES_FILE", err)
	}
}

// The example shipped next to the service must stay valid.
func TestExampleFileIsValid(t *testing.T) {
	srcs, err := Load("../../sources.example.yaml", func(string) string { return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" })
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 5 || srcs[2].Scope != srcs[3].Scope {
		t.Fatalf("example: %d sources, factuarea scopes %q and %q", len(srcs), srcs[2].Scope, srcs[3].Scope)
	}
}

// A Stripe PSP source takes Stripe's scheme and event-id rule; two PSPs
// may not share a dedupe scope.
func TestStripePSPSource(t *testing.T) {
	srcs, err := Parse([]byte(`
sources:
  - {name: stripe, kind: psp, psp: stripe, secrets: [whsec_0123456789abcdef]}
  - {name: dlocal, kind: psp, login: l, secrets: [s]}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := srcs[0].Verifier.(webhooksig.Timestamped); !ok || v.Header != webhooksig.StripeHeader || srcs[0].PSP != "stripe" {
		t.Fatalf("stripe source: PSP %q, verifier %#v", srcs[0].PSP, srcs[0].Verifier)
	}
	if scopes, err := PSPScopes(srcs); err != nil || scopes["stripe"] != "stripe" || scopes["dlocal"] != "dlocal" {
		t.Fatalf("PSPScopes = %v, %v", scopes, err)
	}
	shared, err := Parse([]byte(`
sources:
  - {name: stripe, kind: psp, psp: stripe, secrets: [whsec_0123456789abcdef], dedupe_scope: one}
  - {name: dlocal, kind: psp, login: l, secrets: [s], dedupe_scope: one}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PSPScopes(shared); err == nil || !strings.Contains(err.Error(), `source "dlocal"`) {
		t.Fatalf("PSPScopes of two PSPs in one scope = %v, want an error naming source dlocal", err)
	}
}

// The sources of one scope must agree on what a chargeback becomes.
func TestChargebackRulePerScope(t *testing.T) {
	srcs, err := Parse([]byte(`
sources:
  - {name: a, kind: psp, login: l, secrets: [s], dedupe_scope: dl, chargeback: credit_note}
  - {name: b, kind: psp, login: l, secrets: [s], dedupe_scope: dl, chargeback: credit_note}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ChargebackCreditNote(srcs); err != nil || !got["dl"] {
		t.Fatalf("ChargebackCreditNote = %v, %v, want scope dl credited", got, err)
	}
	srcs[1].ChargebackCreditNote = false
	if _, err := ChargebackCreditNote(srcs); err == nil || !strings.Contains(err.Error(), `source "b"`) {
		t.Fatalf("ChargebackCreditNote of disagreeing sources = %v, want an error naming source b", err)
	}
}

// A Mercado Pago PSP source takes the x-signature scheme (no timestamp
// check unless told: Mercado Pago documents none) and its notification-id
// rule.
func TestMercadoPagoPSPSource(t *testing.T) {
	srcs, err := Parse([]byte(`
sources:
  - {name: mp, kind: psp, psp: mercadopago, secrets: [mp_secret_0123456789]}
  - {name: mp-checked, kind: psp, psp: mercadopago, secrets: [mp_secret_0123456789], tolerance: 10m, dedupe_scope: mp}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := srcs[0].Verifier.(webhook.MercadoPago); !ok || v.Tolerance != 0 || srcs[0].PSP != "mercadopago" {
		t.Fatalf("mercadopago source: PSP %q, verifier %#v", srcs[0].PSP, srcs[0].Verifier)
	}
	if v := srcs[1].Verifier.(webhook.MercadoPago); v.Tolerance != 10*time.Minute {
		t.Fatalf("tolerance %v, want 10m", v.Tolerance)
	}
	if _, err := Parse([]byte(`sources: [{name: mp, kind: psp, psp: mercadopago, secrets: [short]}]`), env(nil)); err == nil {
		t.Fatal("a short Mercado Pago secret was accepted")
	}
}
