package sources

import (
	"strings"
	"testing"
)

// Short or empty secrets stop the service at start, naming the source and
// the secret's position but never its value.
func TestWeakSecretsAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, yaml, want string }{
		{"empty whsec_", `sources: [{name: a, kind: generic, scheme: standard, secrets: ["whsec_"]}]`, `source "a" (#1): secrets[0]: a key of 0 bytes`},
		{"short standard key", `sources: [{name: a, kind: generic, scheme: standard, secrets: ["whsec_c2hvcnQ="]}]`, `source "a" (#1): secrets[0]: a key of 5 bytes`},
		{"short stripe secret", `sources: [{name: b, kind: generic, scheme: stripe, secrets: [whsec_0123456789abcdef, whsec_x]}]`, `source "b" (#1): secrets[1]: a key of 7 bytes`},
		{"short timestamped secret", `sources: [{name: c, kind: generic, scheme: timestamped, header: X-Sig, secrets: [short]}]`, `source "c" (#1): secrets[0]`},
		{"short hmac secret from env", `sources: [{name: d, kind: generic, scheme: hmac_sha256, header: X-Sig, secrets: [env:S]}]`, `source "d" (#1): secrets[0]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), env(map[string]string{"S": "fifteen-bytes!!"}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "fifteen") || strings.Contains(err.Error(), "c2hvcnQ") {
				t.Fatalf("error shows the secret: %v", err)
			}
		})
	}
	if _, err := Parse([]byte(`sources: [{name: e, kind: generic, scheme: hmac_sha256, header: X-Sig, secrets: [sixteen-bytes!!!]}]`), env(nil)); err != nil {
		t.Fatalf("a 16-byte secret: %v", err)
	}
}

// A dedupe key from a header the scheme does not sign is refused at start;
// standard's webhook-id (signed) is allowed.
func TestDedupeHeaderMustBeSigned(t *testing.T) {
	t.Parallel()
	const key = "secrets: [whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]"
	for _, tc := range []struct{ name, yaml, want string }{
		{"timestamped, unsigned header", `sources: [{name: a, kind: generic, scheme: timestamped, header: X-Sig, ` + key + `, dedupe: "header:X-Event-Id"}]`, `source "a" (#1): dedupe: the timestamped scheme does not sign header X-Event-Id`},
		{"stripe, unsigned header", `sources: [{name: a, kind: generic, scheme: stripe, ` + key + `, dedupe: "header:Stripe-Event"}]`, `dedupe: the stripe scheme`},
		{"hmac, unsigned header", `sources: [{name: a, kind: generic, scheme: hmac_sha256, header: X-Sig, ` + key + `, dedupe: "header:X-Id"}]`, `dedupe: the hmac_sha256 scheme`},
		{"standard, another header", `sources: [{name: a, kind: generic, scheme: standard, ` + key + `, dedupe: "header:X-Id"}]`, `dedupe: the standard scheme signs only`},
		{"standard, webhook-id", `sources: [{name: a, kind: generic, scheme: standard, ` + key + `, dedupe: "header:Webhook-Id"}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), env(nil))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestRateLimitFields(t *testing.T) {
	t.Parallel()
	const src = `sources: [{name: a, kind: generic, scheme: stripe, secrets: [whsec_0123456789abcdef]`
	srcs, err := Parse([]byte(src+`, rate_per_second: 2.5}]`), env(nil))
	if err != nil || srcs[0].Limiter == nil || srcs[0].Limiter.Burst() != 3 || srcs[0].Limiter.Limit() != 2.5 {
		t.Fatalf("rate 2.5: %+v, %v; want a limiter of 2.5/s with burst 3", srcs, err)
	}
	if srcs, err := Parse([]byte(src+`}]`), env(nil)); err != nil || srcs[0].Limiter != nil {
		t.Fatalf("no rate: %+v, %v; want no limiter", srcs, err)
	}
	for _, bad := range []string{`, rate_per_second: -1}]`, `, rate_per_second: .nan}]`, `, burst: 5}]`, `, rate_per_second: 1, burst: -1}]`} {
		if _, err := Parse([]byte(src+bad), env(nil)); err == nil || !strings.Contains(err.Error(), `source "a" (#1)`) {
			t.Errorf("%s: %v, want an error naming the source", bad, err)
		}
	}
}
