package sources

import (
	"testing"
)

// FuzzParse reads fuzzed sources files: no panic, and every source it
// accepts has a route name, a verifier, an identifier, a body limit within
// bounds and secrets that passed the strength check.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`
sources:
  - {name: dlocal, kind: psp, scheme: dlocal, login: env:L, secrets: [env:S]}
  - {name: stripe, kind: generic, scheme: stripe, secrets: [whsec_0123456789abcdef]}
  - {name: invoicy, kind: fiscal_provider, scheme: standard, secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], max_body_bytes: 4096, tolerance: 2m}
`))
	f.Add([]byte(`sources: [{name: a, kind: generic, scheme: standard, secrets: ["whsec_"]}]`))
	f.Add([]byte(`sources: [{name: a, kind: generic, scheme: timestamped, header: X-Sig, secrets: [sixteen-bytes!!!], dedupe: "header:X-Id"}]`))
	f.Add([]byte(`sources: [{name: a, kind: generic, scheme: hmac_sha256, header: X-Sig, secrets: [sixteen-bytes!!!], max_body_bytes: -1, tolerance: -5m}]`))
	f.Add([]byte("sources:\n - &a {name: a}\n - *a\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		srcs, err := Parse(raw, env(map[string]string{"L": "login", "S": "secret"}))
		if err != nil {
			return
		}
		for _, s := range srcs {
			if !namePattern.MatchString(s.Name) || s.Verifier == nil || s.Identify == nil || s.Scope == "" {
				t.Fatalf("accepted an incomplete source %+v", s)
			}
			if s.MaxBytes < 1 || s.MaxBytes > maxBodyLimit {
				t.Fatalf("source %q: body limit %d", s.Name, s.MaxBytes)
			}
		}
	})
}
