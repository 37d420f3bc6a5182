package msgauth_test

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
)

// BenchmarkVerify measures what checking one billing message of about 1 KiB
// costs the invoicer.
func BenchmarkVerify(b *testing.B) {
	k, err := msgauth.ParseKey(relayKey)
	if err != nil {
		b.Fatal(err)
	}
	ks, err := msgauth.ParseKeyset(relayKey)
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", 1024)
	attrs := k.Sign(body, outbox.Attributes("billing.payment_paid", "payment:p1:paid", ""))
	b.ReportAllocs()
	for b.Loop() {
		if err := ks.Verify(body, attrs); err != nil {
			b.Fatal(err)
		}
	}
}
