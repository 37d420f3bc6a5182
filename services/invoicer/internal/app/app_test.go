package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
	"github.com/onceflow/onceflow/pkg/config"
	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/app"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

const token = "admin-test-token"

// serve runs the real invoicer against env's database and sandbox and two
// fresh queues; it returns the admin port's base URL and the billing queue.
func serve(t *testing.T, env *invoicertest.Env) (string, func(ev *eventsv1.BillingEvent)) {
	t.Helper()
	c := sqstest.Client(t)
	_, billing := sqstest.Queue(t, c, "invoicer-billing", 5)
	_, provider := sqstest.Queue(t, c, "invoicer-provider", 5)
	base := start(t, env, billing, provider, nil)
	send := func(ev *eventsv1.BillingEvent) {
		b, err := eventsv1.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendMessage(context.Background(), invoicertest.SignedMessage(t, billing, string(b))); err != nil {
			t.Fatal(err)
		}
	}
	return base, send
}

// start runs the real invoicer against env's database and sandbox, the
// queues billing and provider and the settings of extra; it returns the
// admin port's base URL.
func start(t *testing.T, env *invoicertest.Env, billing, provider string, extra map[string]string) string {
	t.Helper()
	vars := map[string]string{
		"DATABASE_URL": env.DSN, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "ADMIN_TOKEN": token, "LOG_LEVEL": "warn",
		"INVOICER_BILLING_QUEUE": billing, "INVOICER_PROVIDER_EVENTS_QUEUE": provider, "INVOICER_CONSUMER_WAIT": "1s",
		"INVOICY_BASE_URL": env.BaseURL, "INVOICY_EMP_CODIGO": invoicertest.EmpCodigo, "INVOICY_EMP_PK": invoicertest.EmpPK,
		"INVOICY_ACCESS_KEY": invoicertest.AccessKey, "INVOICER_PROVIDER_TIMEOUT": "2s", "INVOICER_EMIT_LEASE": "5s",
		"INVOICER_EMIT_POLL_INTERVAL": "20ms", "INVOICER_EMIT_SETTLE": "200ms", "INVOICER_EMIT_RETRY_BASE": "20ms",
		"INVOICER_DGI_POLL_BASE": "20ms", "SHUTDOWN_TIMEOUT": "5s", "INVOICER_METRICS_EVERY": "1ns",
	}
	for k, v := range extra {
		vars[k] = v
	}
	a, err := app.New(context.Background(), load(t, vars), zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	openapitest.Routes(t, "invoicer", a.Routes())
	return "http://" + a.AdminAddr() // every route these tests call is an operator one
}

// call sends an admin request and decodes the JSON answer into out.
func call(t *testing.T, method, url, auth, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := openapitest.Client(t, "invoicer", nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

type doc struct {
	ID              int64  `json:"id"`
	Reference       string `json:"reference"`
	Status          string `json:"status"`
	Number          int64  `json:"number"`
	AttentionReason string `json:"attention_reason"`
}

type errorBody struct {
	Error struct{ Code, Message string } `json:"error"`
}

func TestOperatorResolvesADuplicate(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	base, send := serve(t, env)
	ev := invoicertest.Payment("pay-admin", 100_00, false)
	env.Sandbox.SetRule(fiscalsim.AnyReference, fiscalsim.Rule{Duplicate: true})
	send(ev)
	send(ev) // a redelivery changes nothing

	var parked doc
	deadline := time.Now().Add(30 * time.Second)
	for parked.ID == 0 {
		var list struct{ Documents []doc }
		if code := call(t, "GET", base+"/admin/documents?status=needs_attention", token, "", &list); code != http.StatusOK {
			t.Fatalf("list: %d", code)
		}
		if len(list.Documents) > 0 {
			parked = list.Documents[0]
		} else if time.Now().After(deadline) {
			t.Fatal("no document reached needs_attention")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var st struct {
		Documents map[string]int64 `json:"documents"`
	}
	if code := call(t, "GET", base+"/admin/status", token, "", &st); code != http.StatusOK || st.Documents["needs_attention"] != 1 || st.Documents["authorized"] != 0 {
		t.Fatalf("status: %d %+v, want one document in needs_attention", code, st)
	}
	var cases struct {
		Cases []struct{ ID, Kind, Subject string }
	}
	if code := call(t, "GET", base+"/admin/cases?kind=needs_attention", token, "", &cases); code != http.StatusOK ||
		len(cases.Cases) != 1 || cases.Cases[0].Subject != "document:"+strconv.FormatInt(parked.ID, 10) {
		t.Fatalf("open cases: %d %+v, want the parked document's needs_attention case", code, cases)
	}
	if m := get(t, base+"/metrics"); !strings.Contains(m, `onceflow_cases_open{kind="needs_attention",service="invoicer"} 1`) ||
		!strings.Contains(m, `onceflow_case_oldest_open_age_seconds{kind="needs_attention",service="invoicer"}`) {
		t.Fatal("metrics lack the open needs_attention case")
	}
	var e errorBody
	if code := call(t, "GET", base+"/admin/documents", "wrong", "", &e); code != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
		t.Fatalf("wrong token: %d %+v", code, e)
	}
	id := strconv.FormatInt(parked.ID, 10)
	resolve := base + "/admin/documents/" + id + "/resolve"
	bad := map[string]string{
		`{"action":"adopt","actor":"ana","reason":"dup"}`:           "missing_number",
		`{"action":"burn","actor":"ana","reason":"dup"}`:            "invalid_action",
		`{"action":"void","actor":"","reason":"dup"}`:               "missing_actor_or_reason",
		`{"action":"void","actor":"ana","reason":"x","extra":1}`:    "invalid_body",
		`{"action":"adopt","actor":"ana","reason":"x","number":99}`: "not_held",
	}
	for body, code := range bad {
		var e errorBody
		if status := call(t, "POST", resolve, token, body, &e); status/100 != 4 || e.Error.Code != code {
			t.Errorf("resolve %s: %d %+v, want 4xx %s", body, status, e, code)
		}
	}
	docs := env.Sandbox.Documents()
	body := `{"action":"adopt","actor":"ana@ops","reason":"the first of two; the second is voided at InvoiCy","series":"A","number":` + strconv.Itoa(docs[0].Number) + `}`
	var resolved struct{ Document doc }
	if code := call(t, "POST", resolve, token, body, &resolved); code != http.StatusOK || resolved.Document.Status != "authorized" || resolved.Document.Number != int64(docs[0].Number) {
		t.Fatalf("adopt: %d %+v", code, resolved)
	}
	if code := call(t, "POST", resolve, token, `{"action":"void","actor":"ana","reason":"again"}`, &e); code != http.StatusConflict {
		t.Fatalf("second resolution: %d, want 409", code)
	}
	var shown struct {
		Attempts    []struct{ Operation, Outcome string }
		Resolutions []struct {
			Action, Actor, Reason string
			ToStatus              string `json:"to_status"`
		}
	}
	call(t, "GET", base+"/admin/documents/"+id, token, "", &shown)
	if len(shown.Attempts) < 2 || len(shown.Resolutions) != 1 || shown.Resolutions[0].Actor != "ana@ops" ||
		shown.Resolutions[0].Action != "adopt" || shown.Resolutions[0].ToStatus != "authorized" {
		t.Fatalf("show: %+v", shown)
	}
	if n := len(env.Sandbox.Documents()); n != 2 {
		t.Fatalf("%d documents at the sandbox, want the 2 of the fault", n)
	}
	metrics := get(t, base+"/metrics")
	for _, want := range []string{`onceflow_invoicer_documents{status="authorized"} 1`, "onceflow_invoicer_needs_attention_documents 0",
		`onceflow_invoicer_messages_total{outcome="duplicate",queue="billing"} 1`, "onceflow_invoicer_documents_due 0",
		`onceflow_cases_open{kind="needs_attention",service="invoicer"} 0`, `onceflow_cases_open{kind="document_rejected",service="invoicer"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	keys := env.Outbox(t)
	if len(keys) != 2 || !strings.HasSuffix(keys[1], ":authorized") {
		t.Fatalf("outbox %v, want needs_attention then authorized", keys)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := openapitest.Client(t, "invoicer", nil).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// load reads a Config from env alone, as service.Main does from getenv.
func load(t *testing.T, env map[string]string) app.Config {
	t.Helper()
	loaded, err := config.LoadFrom[app.Config](signed(env))
	if err != nil {
		t.Fatal(err)
	}
	return loaded.Value
}

// signed is getenv over env, with the test kit's billing key trusted on
// both queues unless env names the keys itself.
func signed(env map[string]string) config.Getenv {
	return func(k string) string {
		if _, set := env[k]; !set && (k == "INVOICER_BILLING_KEYS" || k == "INVOICER_PROVIDER_EVENTS_KEYS") {
			return invoicertest.BillingKey
		}
		return env[k]
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	for env, value := range map[string]string{
		"INVOICER_PROVIDER_MODE": "guess", "INVOICER_VAT_RATES": "2007-07-01:ten:22", "INVOICER_BCU_URL": "bcu.gub.uy", "INVOICER_PROVIDER_STATUS_MAP": "5=great",
		"INVOICER_PROVIDER": "soap", "INVOICER_CONSUMER_VISIBILITY": "1s", "INVOICER_CREDIT_NOTE_WAIT": "0s",
		"INVOICER_EMIT_LEASE": "1s", "INVOICER_ATTEMPTS_RETENTION": "10m", "INVOICER_ATTEMPTS_PRUNE_BATCH": "0",
		"INVOICER_ATTEMPTS_PRUNE_INTERVAL": "0s",
	} {
		t.Run(env, func(t *testing.T) {
			t.Parallel()
			_, err := config.LoadFrom[app.Config](signed(map[string]string{env: value}))
			if err == nil || !strings.Contains(err.Error(), env) {
				t.Fatalf("Load with %s=%s: %v, want an error naming it", env, value, err)
			}
		})
	}
}
