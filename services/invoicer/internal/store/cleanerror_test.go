package store_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// TestCleanErrorMasksPersonalDataAndClips checks what an attempt keeps of a
// provider's error text.
func TestCleanErrorMasksPersonalDataAndClips(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"plain", "HTTP 503: service unavailable", "HTTP 503: service unavailable"},
		{"email", "receptor ana.perez@example.com invalido", "receptor <email> invalido"},
		{"tax id", "RUT 211234560018 no habilitado", "RUT <number> no habilitado"},
		{"dotted id", "CI 1.234.567-8 invalida", "CI <number> invalida"},
		{"control characters", "line one\nline\ttwo\x00", "line one line two "},
	}
	for _, c := range cases {
		if got := store.CleanError(c.in); got != c.want {
			t.Errorf("%s: CleanError(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
	long := strings.Repeat("é", 400)
	got := store.CleanError(long)
	if len(got) > store.MaxErrorBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("CleanError of %d bytes = %d bytes (valid UTF-8 %t), want at most %d, valid and marked clipped",
			len(long), len(got), utf8.ValidString(got), store.MaxErrorBytes)
	}
}

// TestInsertAttemptsStoresCleanErrors checks the store cleans the text
// before it reaches the table.
func TestInsertAttemptsStoresCleanErrors(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	var id int64
	if err := env.Pool.QueryRow(t.Context(), `INSERT INTO invoicer.fiscal_documents
		(source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer)
		VALUES ('payment', 'p-err', 'invoice', 'payment:p-err:paid', '77', 101, 1000, 'UYU', '{}') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	msg := "buyer juan@example.com RUT 219999990011 rejected " + strings.Repeat("x", 1000)
	if err := env.Store.InsertAttempts(t.Context(), []store.Attempt{{DocumentID: id, Operation: "emit", Outcome: "refused", Error: &msg}}); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := env.Pool.QueryRow(t.Context(), `SELECT error FROM invoicer.emission_attempts WHERE document_id = $1`, id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, "juan@") || strings.Contains(stored, "219999990011") || len(stored) > store.MaxErrorBytes {
		t.Fatalf("stored error %q (%d bytes), want it masked and at most %d bytes", stored, len(stored), store.MaxErrorBytes)
	}
}
