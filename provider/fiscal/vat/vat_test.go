package vat

import (
	"math/big"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var std = DefaultSchedule()[0]

func TestComputeMixed(t *testing.T) {
	got, err := Compute([]Line{{Exempt, 50000}, {Minimum, 11000}, {Basic, 100000}, {NotBillable, 500}}, std, true)
	if err != nil {
		t.Fatal(err)
	}
	want := Totals{NonTaxed: 50000, NetMinimum: 10000, VATMinimum: 1000, NetBasic: 81967, VATBasic: 18033,
		Total: 161000, NonBillable: 500, Pay: 161500, Lines: 4, MinimumRateBP: 1000, BasicRateBP: 2200,
		ExcludingVAT: 141967}
	if got != want {
		t.Fatalf("totals\n got %+v\nwant %+v", got, want)
	}
}

func TestComputeExclusive(t *testing.T) {
	got, err := Compute([]Line{{Basic, 81967}, {Minimum, 10000}}, std, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.VATBasic != 18033 || got.VATMinimum != 1000 || got.Total != 111000 {
		t.Fatalf("exclusive totals %+v", got)
	}
}

func TestComputeRefuses(t *testing.T) {
	for name, lines := range map[string][]Line{
		"negative":     {{Basic, -1}},
		"indicator":    {{Indicator(4), 100}},
		"negative pay": {{Basic, 100}, {NotBillableNegative, 200}},
		"overflow":     {{Exempt, 1 << 62}, {Exempt, 1 << 62}, {Exempt, 1 << 62}},
	} {
		if _, err := Compute(lines, std, true); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Compute([]Line{{Basic, 100}}, Rates{}, true); err == nil {
		t.Error("taxed line without rates accepted")
	}
}

// TestTotalsAddUp is the property: for random lines and rates the totals
// add up exactly, each rate's net is the exact quotient rounded half up,
// and the amount to pay is the signed sum of the lines.
func TestTotalsAddUp(t *testing.T) {
	indicators := []Indicator{Exempt, Minimum, Basic, NotBillable, NotBillableNegative, Export, Suspended}
	rapid.Check(t, func(t *rapid.T) {
		r := Rates{MinimumBP: rapid.Int64Range(1, 5000).Draw(t, "min"), BasicBP: rapid.Int64Range(1, 5000).Draw(t, "basic")}
		n := rapid.IntRange(1, 40).Draw(t, "n")
		lines := make([]Line, n)
		var signed, minimum, basic int64
		for i := range lines {
			l := Line{rapid.SampledFrom(indicators).Draw(t, "ind"), rapid.Int64Range(0, 1_000_000_000).Draw(t, "amount")}
			lines[i] = l
			switch l.Indicator {
			case NotBillableNegative:
				signed -= l.AmountMinor
			case Minimum:
				minimum += l.AmountMinor
				signed += l.AmountMinor
			case Basic:
				basic += l.AmountMinor
				signed += l.AmountMinor
			default:
				signed += l.AmountMinor
			}
		}
		tot, err := Compute(lines, r, true)
		if signed < 0 {
			if err == nil {
				t.Fatalf("negative amount to pay accepted: %+v", tot)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if tot.Pay != signed || tot.Lines != n {
			t.Fatalf("pay %d, lines add up to %d", tot.Pay, signed)
		}
		if tot.Total != tot.NonTaxed+tot.Export+tot.Suspended+tot.NetMinimum+tot.NetBasic+tot.VATMinimum+tot.VATBasic ||
			tot.Pay != tot.Total+tot.NonBillable {
			t.Fatalf("totals do not add up: %+v", tot)
		}
		if tot.NetMinimum+tot.VATMinimum != minimum || tot.NetBasic+tot.VATBasic != basic {
			t.Fatalf("rate groups lost cents: %+v", tot)
		}
		checkNet(t, minimum, r.MinimumBP, tot.NetMinimum)
		checkNet(t, basic, r.BasicBP, tot.NetBasic)
	})
}

// checkNet asserts net is gross / (1 + bp/10000) to the nearest minor unit,
// halves up, by exact rational arithmetic.
func checkNet(t *rapid.T, gross, bp, net int64) {
	exact := new(big.Rat).SetFrac(big.NewInt(gross*10000), big.NewInt(10000+bp))
	diff := new(big.Rat).Sub(exact, new(big.Rat).SetInt64(net))
	half := big.NewRat(1, 2)
	if diff.Cmp(half) >= 0 || diff.Cmp(new(big.Rat).Neg(half)) < 0 {
		t.Fatalf("net of %d at %d bp is %d, exact %s", gross, bp, net, exact.FloatString(4))
	}
}

func TestSchedule(t *testing.T) {
	s, err := ParseSchedule("2030-01-01:11:23,2007-07-01:10:22")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := s.At(time.Date(2029, 12, 31, 23, 0, 0, 0, time.UTC)); r.BasicBP != 2200 {
		t.Fatalf("2029: %+v", r)
	}
	if r, _ := s.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)); r.MinimumBP != 1100 || r.BasicBP != 2300 {
		t.Fatalf("2030: %+v", r)
	}
	if _, ok := s.At(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Fatal("rates before the first entry")
	}
	for _, bad := range []string{"2007-07-01:10", "07/01/2007:10:22", "2007-07-01:-1:22", "2007-07-01:10:22,2007-07-01:11:22"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if Percent(1000) != "10" || Percent(2250) != "22.5" {
		t.Fatal(Percent(1000), Percent(2250))
	}
}

func TestParseIndicator(t *testing.T) {
	if i, err := ParseIndicator(""); err != nil || i != Basic {
		t.Fatal(i, err)
	}
	if i, err := ParseIndicator("Exempt"); err != nil || i != Exempt {
		t.Fatal(i, err)
	}
	if _, err := ParseIndicator("zero"); err == nil {
		t.Fatal("unknown indicator accepted")
	}
}

// BenchmarkCompute measures the totals of a 10-line document with mixed
// indicators.
func BenchmarkCompute(b *testing.B) {
	lines := make([]Line, 10)
	for i := range lines {
		lines[i] = Line{[]Indicator{Exempt, Minimum, Basic}[i%3], int64(1000 + 137*i)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(lines, std, true); err != nil {
			b.Fatal(err)
		}
	}
}
