package chaos

import (
	"fmt"
	"math/rand/v2"
)

// ci returns a valid Uruguayan CI (7 digits and the check digit) for n.
func ci(n int) string {
	body := fmt.Sprintf("%07d", 1000000+n%9000000)
	weights := []int{2, 9, 8, 7, 6, 3, 4}
	sum := 0
	for i, w := range weights {
		sum += int(body[i]-'0') * w
	}
	return fmt.Sprintf("%s%d", body, (10-sum%10)%10)
}

// rut returns a valid RUT (11 digits and DGI's check digit) for n, skipping
// bodies that have no valid check digit.
func rut(n int) string {
	weights := []int{4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}
	for i := 0; ; i++ {
		body := fmt.Sprintf("21%06d001", (n+i)%1000000)
		sum := 0
		for j, w := range weights {
			sum += int(body[j]-'0') * w
		}
		switch check := 11 - sum%11; check {
		case 10:
			continue
		case 11:
			return body + "0"
		default:
			return fmt.Sprintf("%s%d", body, check)
		}
	}
}

// buyer is the fiscal profile of payment i: a company with a RUT (an
// e-Factura) or a person with a CI (an e-Ticket).
func buyer(i int, company bool) map[string]string {
	if company {
		return map[string]string{"doc_type": "RUT", "doc_country": "UY", "doc_number": rut(i), "legal_name": fmt.Sprintf("Chaos Company %d SA", i),
			"address": "Rambla 1234", "city": "Montevideo", "department": "Montevideo", "country": "UY"}
	}
	return map[string]string{"doc_type": "CI", "doc_country": "UY", "doc_number": ci(i), "legal_name": fmt.Sprintf("Chaos Buyer %d", i), "country": "UY"}
}

// plan is what the driver does for one payment, drawn from the seed.
type plan struct {
	psp         string // where it is paid (and refunded)
	amountMinor int64
	company     bool
	refund      bool
	partial     bool
	mismatch    bool // paid at the PSP for another amount than the order's
	double      bool // the order gets a second PAID payment
	refuse      bool // the fiscal sandbox refuses its invoice until lifted
	chargeback  bool // charged back at the PSP once ingest recorded it PAID
}

func plans(cfg Config) []plan {
	rnd := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed+1))
	out := make([]plan, cfg.Payments)
	for i := range out {
		out[i] = plan{
			psp:         cfg.PSPs[i%len(cfg.PSPs)],
			amountMinor: 10000 + rnd.Int64N(490000), // 100.00 to 5,000.00 UYU
			company:     rnd.Float64() < cfg.CompanyShare,
			refund:      rnd.Float64() < cfg.RefundShare,
			partial:     rnd.Float64() < cfg.PartialShare,
		}
	}
	faults := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed+3))
	for i := range out {
		p := &out[i]
		p.mismatch = faults.Float64() < cfg.MismatchShare
		p.double = !p.mismatch && faults.Float64() < cfg.DoublePayShare
		p.refuse = faults.Float64() < cfg.RefuseShare
		p.refund = p.refund && !p.mismatch && !p.double // their payment waits for an operator
	}
	chargebacks := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed+5)) // its own stream: the other draws stay as they were
	for i := range out {
		p := &out[i]
		p.chargeback = chargebacks.Float64() < cfg.ChargebackShare && !p.mismatch && !p.double && !p.refund
	}
	return out
}
