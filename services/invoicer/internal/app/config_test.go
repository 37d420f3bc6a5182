package app_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/services/invoicer/internal/app"
)

// TestConfigReadsOldNamesForOneRelease checks the INVOICER_ renames: an old
// name alone is still read (and reported, for the warning), and when both
// are set the new name wins.
func TestConfigReadsOldNamesForOneRelease(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"EMIT_WORKERS": "3", "CREDIT_NOTE_WAIT": "24h", // old names alone
		"EMIT_BATCH": "9", "INVOICER_EMIT_BATCH": "7", // both: the new one wins
		"INVOICER_CONSUMERS": "2", // the new name alone
		"INVOICY_BASE_URL":   "https://invoicy.example/InvoiCy/", "INVOICY_EMP_CODIGO": "SUC", "INVOICY_EMP_PK": "PK", "INVOICY_ACCESS_KEY": "KEY",
	}
	loaded, err := config.LoadFrom[app.Config](signed(env))
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Value
	if c.EmitWorkers != 3 || c.CreditNoteWait != 24*time.Hour {
		t.Errorf("workers %d, credit-note wait %s; want 3 and 24h from the old names", c.EmitWorkers, c.CreditNoteWait)
	}
	if c.EmitBatch != 7 {
		t.Errorf("batch %d, want 7: INVOICER_EMIT_BATCH wins over EMIT_BATCH", c.EmitBatch)
	}
	if c.Consumers != 2 {
		t.Errorf("consumers %d, want 2 from INVOICER_CONSUMERS", c.Consumers)
	}
	want := map[string]string{"EMIT_WORKERS": "INVOICER_EMIT_WORKERS", "CREDIT_NOTE_WAIT": "INVOICER_CREDIT_NOTE_WAIT"}
	if !reflect.DeepEqual(loaded.Renamed, want) {
		t.Errorf("renamed %v, want %v: only old names actually read are reported", loaded.Renamed, want)
	}
}

// TestOwnSettingsCarryThePrefix checks every variable of the invoicer's
// Config: its own carry INVOICER_ and name their old variable; shared ones
// (config.Common) and the providers' accounts (INVOICY_*, KEYED_*) keep
// their names.
func TestOwnSettingsCarryThePrefix(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[app.Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous {
			continue // config.Common and invoicy.Settings
		}
		name, old := f.Tag.Get("env"), f.Tag.Get("renamed")
		switch {
		case strings.HasPrefix(name, "KEYED_"):
			if old != "" {
				t.Errorf("%s: renamed from %s, want the account's name kept", f.Name, old)
			}
		case !strings.HasPrefix(name, "INVOICER_") || (old != "" && "INVOICER_"+old != name):
			// Settings added after the rename have no old name.
			t.Errorf("%s: env %q renamed %q, want INVOICER_<old> renamed from <old>", f.Name, name, old)
		}
	}
}

// TestInvoiCyBranchIsRequiredOnlyForInvoiCy checks the InvoiCy settings the
// invoicer shares with the reconciler: no default root, so the invoicy
// adapter needs INVOICY_BASE_URL and its credentials, and the keyed one
// does not.
func TestInvoiCyBranchIsRequiredOnlyForInvoiCy(t *testing.T) {
	t.Parallel()
	branch := map[string]string{"INVOICY_BASE_URL": "https://invoicy.example/InvoiCy/", "INVOICY_EMP_CODIGO": "SUC",
		"INVOICY_EMP_PK": "PK", "INVOICY_ACCESS_KEY": "KEY"}
	for _, missing := range []string{"INVOICY_BASE_URL", "INVOICY_EMP_CODIGO", "INVOICY_EMP_PK", "INVOICY_ACCESS_KEY"} {
		env := map[string]string{}
		for k, v := range branch {
			if k != missing {
				env[k] = v
			}
		}
		_, err := config.LoadFrom[app.Config](signed(env))
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: %v, want an error naming it", missing, err)
		}
	}
	keyed := map[string]string{"INVOICER_PROVIDER": "keyed"}
	if _, err := config.LoadFrom[app.Config](signed(keyed)); err != nil {
		t.Errorf("keyed without INVOICY_*: %v, want no error", err)
	}
	if s := load(t, branch).Settings; s.BaseURL != branch["INVOICY_BASE_URL"] || s.EmpCodigo != "SUC" || s.EmpPK != "PK" || s.AccessKey != "KEY" {
		t.Errorf("settings %+v, want the branch given", s)
	}
}

// TestRefusedCaseAfter checks INVOICER_REFUSED_CASE_AFTER: 5 by default,
// and a value below 1 stops the service with a message naming it.
func TestRefusedCaseAfter(t *testing.T) {
	t.Parallel()
	if n := load(t, map[string]string{"INVOICER_PROVIDER": "keyed"}).RefusedCaseAfter; n != 5 {
		t.Errorf("default %d, want 5", n)
	}
	refuses(t, "INVOICER_REFUSED_CASE_AFTER", "INVOICER_REFUSED_CASE_AFTER", "0", "-1")
}

// TestEmitLinger checks INVOICER_EMIT_LINGER: 50ms by default, and a value
// outside 0 to 1s stops the service with a message naming it.
func TestEmitLinger(t *testing.T) {
	t.Parallel()
	if d := load(t, map[string]string{"INVOICER_PROVIDER": "keyed"}).EmitLinger; d != 50*time.Millisecond {
		t.Errorf("default %s, want 50ms", d)
	}
	refuses(t, "INVOICER_EMIT_LINGER", "INVOICER_EMIT_LINGER: want a duration from 0 to 1s", "-1ms", "2s")
}

// refuses fails unless each of values of setting name stops the service
// with an error containing want.
func refuses(t *testing.T, name, want string, values ...string) {
	t.Helper()
	for _, v := range values {
		env := map[string]string{"INVOICER_PROVIDER": "keyed", name: v}
		if _, err := config.LoadFrom[app.Config](signed(env)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want an error containing %q", name, v, err, want)
		}
	}
}

// TestQueueKeysAreRequiredUnlessUnsignedIsAccepted checks the rollout
// rule on each queue: no INVOICER_BILLING_KEYS (or
// INVOICER_PROVIDER_EVENTS_KEYS) stops the invoicer unless its
// *_UNSIGNED=accept, and a weak or malformed key stops it with a message
// naming the variable, never the secret.
func TestQueueKeysAreRequiredUnlessUnsignedIsAccepted(t *testing.T) {
	t.Parallel()
	for _, q := range []struct{ keys, unsigned, other string }{
		{"INVOICER_BILLING_KEYS", "INVOICER_BILLING_UNSIGNED", "INVOICER_PROVIDER_EVENTS_KEYS"},
		{"INVOICER_PROVIDER_EVENTS_KEYS", "INVOICER_PROVIDER_EVENTS_UNSIGNED", "INVOICER_BILLING_KEYS"},
	} {
		// The other queue is configured, so each error is this queue's.
		keyed := func(vars ...string) config.Getenv {
			env := map[string]string{"INVOICER_PROVIDER": "keyed", q.other: "relay-1:0123456789abcdef"}
			for i := 0; i+1 < len(vars); i += 2 {
				env[vars[i]] = vars[i+1]
			}
			return func(k string) string { return env[k] }
		}
		for name, c := range map[string]struct {
			getenv config.Getenv
			want   string // a variable the error must name; empty for no error
		}{
			"no keys":           {keyed(), q.keys},
			"weak key":          {keyed(q.keys, "relay-1:weak-secret"), q.keys},
			"bad mode":          {keyed(q.keys, "relay-1:0123456789abcdef", q.unsigned, "maybe"), q.unsigned},
			"keys":              {keyed(q.keys, "relay-1:0123456789abcdef,reconciler-1:fedcba9876543210"), ""},
			"rollout, no keys":  {keyed(q.unsigned, "accept"), ""},
			"rollout with keys": {keyed(q.keys, "relay-1:0123456789abcdef", q.unsigned, "accept"), ""},
		} {
			_, err := config.LoadFrom[app.Config](c.getenv)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s, %s: %v, want no error", q.keys, name, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s, %s: %v, want an error naming %s", q.keys, name, err, c.want)
			case err != nil && strings.Contains(err.Error(), "weak-secret"):
				t.Errorf("%s, %s: the error shows the secret: %v", q.keys, name, err)
			}
		}
	}
}

// TestEmitSendsStayWithinTheProviderRateLimit checks how many of a round's
// documents a worker sends at once: the whole batch without a rate limit,
// and under one only as many as the limit serves within a call's timeout.
func TestEmitSendsStayWithinTheProviderRateLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		// 10 a second for 15 s and a burst of 5 are 155 calls; 32 workers
		// sending 3 and looking up one each make 128.
		{env: map[string]string{}, want: 3},
		{env: map[string]string{"INVOICER_EMIT_WORKERS": "16"}, want: 8},
		{env: map[string]string{"INVOICER_PROVIDER_RATE_LIMIT": "0"}, want: 10},
		{env: map[string]string{"INVOICER_PROVIDER_RATE_LIMIT": "0", "INVOICER_EMIT_BATCH": "25"}, want: 25},
		{env: map[string]string{"INVOICER_EMIT_WORKERS": "4"}, want: 10},
		// 20 calls for 32 workers: one send after another.
		{env: map[string]string{"INVOICER_PROVIDER_RATE_LIMIT": "1"}, want: 1},
		{env: map[string]string{"INVOICER_PROVIDER_RATE_LIMIT": "2", "INVOICER_PROVIDER_TIMEOUT": "5s", "INVOICER_EMIT_WORKERS": "2"}, want: 6},
	} {
		tc.env["INVOICER_PROVIDER"] = "keyed"
		if got := load(t, tc.env).EmitSends(); got != tc.want {
			t.Errorf("%v: %d sends at once, want %d", tc.env, got, tc.want)
		}
	}
}
