package apply

import (
	"encoding/json"
	"math/big"
	"slices"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
)

// refundLines are the credit note lines of a refund of amount on an order
// with lines: one line per VAT indicator of the order, the amount shared in
// proportion to what the order's lines at that indicator add up to (largest
// remainders take the leftover cents), so that a credit note returns the
// VAT the invoice charged. Orders without lines, or whose lines are all at
// one indicator, get one line. Non-billable lines are left out.
func refundLines(description string, amount int64, lines []byte) []*eventsv1.Line {
	var ol []OrderLine
	_ = json.Unmarshal(lines, &ol) // an order's lines were validated when stored
	groups := map[string]int64{}
	var order []string
	var total int64
	for _, l := range ol {
		ind, err := vat.ParseIndicator(l.VAT)
		if err != nil || ind == vat.NotBillable || ind == vat.NotBillableNegative || l.AmountMinor <= 0 {
			continue
		}
		key := ind.String()
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] += l.AmountMinor
		total += l.AmountMinor
	}
	if len(order) <= 1 {
		v := ""
		if len(order) == 1 {
			v = order[0]
		}
		return []*eventsv1.Line{{Description: description, Quantity: 1, UnitMinor: amount, AmountMinor: amount, Vat: v}}
	}
	shares := allocate(amount, total, order, groups)
	out := make([]*eventsv1.Line, 0, len(order))
	for i, v := range order {
		if shares[i] > 0 {
			out = append(out, &eventsv1.Line{Description: description + " (" + v + ")", Quantity: 1,
				UnitMinor: shares[i], AmountMinor: shares[i], Vat: v})
		}
	}
	return out
}

// allocate shares amount among groups in proportion to their weight out of
// total, by largest remainder; the shares add up to amount exactly.
func allocate(amount, total int64, order []string, groups map[string]int64) []int64 {
	shares := make([]int64, len(order))
	rems := make([]*big.Int, len(order))
	left := amount
	for i, k := range order {
		num := new(big.Int).Mul(big.NewInt(amount), big.NewInt(groups[k]))
		q, r := new(big.Int).QuoRem(num, big.NewInt(total), new(big.Int))
		shares[i], rems[i] = q.Int64(), r
		left -= shares[i]
	}
	idx := make([]int, len(order))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return rems[b].Cmp(rems[a]) })
	for i := 0; left > 0; i++ {
		shares[idx[i%len(idx)]]++
		left--
	}
	return shares
}

// convertLines returns lines in the charged currency: each line's amount
// times charged / the lines' signed total, rounded, with the rounding
// difference on the largest line so the signed total is charged exactly.
// Each converted line is one unit at its amount (a unit price would not
// divide evenly). The VAT indicators are kept.
func convertLines(lines []OrderLine, charged int64) []OrderLine {
	var total int64
	largest := -1
	for i, l := range lines {
		if isNegative(l) {
			total -= l.AmountMinor
			continue
		}
		total += l.AmountMinor
		if largest < 0 || l.AmountMinor > lines[largest].AmountMinor {
			largest = i
		}
	}
	if total <= 0 || largest < 0 {
		return lines
	}
	out := make([]OrderLine, len(lines))
	var sum int64
	for i, l := range lines {
		amount := vat.RoundDiv(big.NewInt(l.AmountMinor), big.NewInt(charged), big.NewInt(total))
		out[i] = OrderLine{Description: l.Description, Quantity: 1, UnitMinor: amount, AmountMinor: amount, VAT: l.VAT}
		if isNegative(l) {
			sum -= amount
		} else {
			sum += amount
		}
	}
	fix := &out[largest]
	fix.AmountMinor += charged - sum
	fix.UnitMinor = fix.AmountMinor
	return out
}

func isNegative(l OrderLine) bool {
	ind, err := vat.ParseIndicator(l.VAT)
	return err == nil && ind == vat.NotBillableNegative
}
