package fiscalsim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/sandbox/fiscalsim"
)

func TestKeyedAPIDeduplicatesByKey(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	body := `{"reference":"` + ref + `","type":101,"issue_date":"2026-11-30","currency":"UYU","total":"10.50","addendum":"a"}`
	send := func(token, key string) (int, fiscalsim.KeyedDocument) {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/documents", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var d fiscalsim.KeyedDocument
		_ = json.NewDecoder(resp.Body).Decode(&d)
		return resp.StatusCode, d
	}
	if code, _ := send("wrong", ref); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	if code, _ := send(testKey, "999"); code != http.StatusUnprocessableEntity {
		t.Fatalf("key other than the reference: %d", code)
	}
	code1, first := send(testKey, ref)
	code2, again := send(testKey, ref)
	if code1 != http.StatusCreated || code2 != http.StatusOK || again != first || srv.CountByReference(ref) != 1 {
		t.Fatalf("sends: %d %+v then %d %+v, %d stored; want 201, 200 with the same document, 1 stored", code1, first, code2, again, srv.CountByReference(ref))
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/documents/42", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET unknown key: %d, want 404", resp.StatusCode)
	}
}
