package fiscal

import (
	"fmt"
	"strings"
)

// ParseStatusMap reads a provider status mapping (InvoiCy CFEStatus codes,
// or another provider's status words) written as comma-separated
// code=status pairs, e.g. "4=pending_dgi,5=authorized,3=rejected". Every
// status must be one an adapter may report: pending_dgi, authorized,
// observed, rejected or voided.
func ParseStatusMap(s string) (map[string]Status, error) {
	out := map[string]Status{}
	for pair := range strings.SplitSeq(s, ",") {
		code, status, ok := strings.Cut(strings.TrimSpace(pair), "=")
		st := Status(strings.TrimSpace(status))
		switch {
		case !ok || strings.TrimSpace(code) == "":
			return nil, fmt.Errorf("%q: want code=status", pair)
		case st != StatusPendingDGI && st != StatusAuthorized && st != StatusObserved && st != StatusRejected && st != StatusVoided:
			return nil, fmt.Errorf("%q: status must be pending_dgi, authorized, observed, rejected or voided", pair)
		}
		out[strings.TrimSpace(code)] = st
	}
	return out, nil
}
