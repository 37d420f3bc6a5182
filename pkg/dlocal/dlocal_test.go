package dlocal_test

import (
	"errors"
	"testing"

	"github.com/onceflow/onceflow/pkg/dlocal"
)

// The vector in docs/wire-dlocal.md, "Test vector".
const (
	vecSecret = "test_secret_key"
	vecLogin  = "test_login"
	vecDate   = "2024-01-01T00:00:00.000Z"
	vecBody   = `{"id":"D-4-test","status":"PAID"}`
	vecSig    = "4c91795a7629f1fb2ff9f30eb3d974e7f5b8ffd3cab4f6a2bdbb2ae084d8011b"
)

func TestSignMatchesVector(t *testing.T) {
	t.Parallel()
	if got := dlocal.Sign(vecSecret, vecLogin, vecDate, []byte(vecBody)); got != vecSig {
		t.Fatalf("Sign = %s, want %s", got, vecSig)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		date   string
		header string
		want   error
	}{
		{"valid", vecBody, vecDate, dlocal.Authorization(vecSig), nil},
		{"tampered body", `{"id":"D-4-test","status":"PENDING"}`, vecDate, dlocal.Authorization(vecSig), dlocal.ErrBadSignature},
		{"other date", vecBody, "2024-01-01T00:00:01.000Z", dlocal.Authorization(vecSig), dlocal.ErrBadSignature},
		{"missing", vecBody, vecDate, "", dlocal.ErrMissingSignature},
		{"wrong scheme", vecBody, vecDate, "Bearer " + vecSig, dlocal.ErrMissingSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := dlocal.Verify(vecSecret, vecLogin, tc.date, []byte(tc.body), tc.header)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}
