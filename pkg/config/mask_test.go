package config

import (
	"strings"
	"testing"
)

// TestMaskHidesDSNPasswords checks every form a database password can take in
// a DSN is masked, and that the rest of the DSN stays readable.
func TestMaskHidesDSNPasswords(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value, want string
	}{
		{"url userinfo", "postgres://app:hunter2@db:5432/x", "postgres://app:***@db:5432/x"},
		{"url query", "postgres://app@db/x?password=hunter2&sslmode=require", "postgres://app@db/x?password=***&sslmode=require"},
		{"url query upper case", "postgres://db/x?PASSWORD=hunter2", "postgres://db/x?PASSWORD=***"},
		{"url query sslpassword", "postgres://db/x?sslpassword=hunter2", "postgres://db/x?sslpassword=***"},
		{"url both", "postgres://app:hunter2@db/x?password=hunter2", "postgres://app:***@db/x?password=***"},
		{"unparsable url", "postgres://app:hun%zzter2@db/x", "postgres://app:***@db/x"},
		{"keywords", "host=db user=app password=hunter2 dbname=x", "host=db user=app password=*** dbname=x"},
		{"keywords first", "password=hunter2 host=db", "password=*** host=db"},
		{"keywords spaced", "host=db password = hunter2 dbname=x", "host=db password = *** dbname=x"},
		{"keywords quoted", `host=db password='hun ter\'2' dbname=x`, "host=db password=*** dbname=x"},
		{"keywords unterminated quote", `host=db password='hunter2`, "host=db password=***"},
		{"keywords sslpassword", "host=db sslpassword=hunter2", "host=db sslpassword=***"},
		{"no secret", "host=db user=app dbname=x", "host=db user=app dbname=x"},
		{"plain value", "http://fauxqs:4566", "http://fauxqs:4566"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := mask("DATABASE_URL", c.value)
			if strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter") || strings.Contains(got, "zzter2") {
				t.Fatalf("mask(%q) = %q leaks the password", c.value, got)
			}
			if got != c.want {
				t.Fatalf("mask(%q) = %q, want %q", c.value, got, c.want)
			}
		})
	}
}

// TestMaskHidesKeysLists checks a list of keys (INVOICER_BILLING_KEYS) is
// masked like a single key.
func TestMaskHidesKeysLists(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"INVOICER_BILLING_KEYS", "RELAY_SIGNING_KEY", "ADMIN_TOKEN"} {
		if got := mask(key, "relay-1:0123456789abcdef"); got != "***" {
			t.Errorf("mask(%s) = %q, want ***", key, got)
		}
	}
}
