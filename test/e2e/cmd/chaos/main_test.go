package main

import (
	"slices"
	"strings"
	"testing"
)

// -psps spreads payments over the named PSPs (dLocal alone by default) and
// refuses a PSP the sandbox does not speak, or none.
func TestParsePSPs(t *testing.T) {
	cfg, err := parse(nil)
	if err != nil || !slices.Equal(cfg.PSPs, []string{"dlocal"}) {
		t.Fatalf("default PSPs = %v (%v), want dlocal", cfg.PSPs, err)
	}
	cfg, err = parse([]string{"-psps", "dlocal, stripe,mercadopago", "-payments", "3000", "-kills", "20"})
	if err != nil || !slices.Equal(cfg.PSPs, []string{"dlocal", "stripe", "mercadopago"}) || cfg.Payments != 3000 || cfg.Kills != 20 {
		t.Fatalf("parsed %v payments=%d kills=%d (%v)", cfg.PSPs, cfg.Payments, cfg.Kills, err)
	}
	for _, bad := range []string{"paypal", "", "dlocal,adyen"} {
		if _, err := parse([]string{"-psps", bad}); err == nil || !strings.Contains(err.Error(), "-psps") {
			t.Errorf("-psps %q: %v, want an error naming -psps", bad, err)
		}
	}
}

// -chargeback-share sets the share of payments charged back, and a share
// outside 0 to 1 is refused naming it.
func TestParseChargebackShare(t *testing.T) {
	cfg, err := parse([]string{"-chargeback-share", "0.05"})
	if err != nil || cfg.ChargebackShare != 0.05 {
		t.Fatalf("chargeback share = %v (%v), want 0.05", cfg.ChargebackShare, err)
	}
	if _, err := parse([]string{"-chargeback-share", "1.5"}); err == nil || !strings.Contains(err.Error(), "-chargeback-share") {
		t.Errorf("-chargeback-share 1.5: %v, want an error naming it", err)
	}
}
