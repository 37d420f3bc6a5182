package fiscal_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
)

func TestMontevideoIsUTCMinusThree(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2026, 1, 15, 2, 30, 0, 0, time.UTC), // southern summer: no daylight saving since 2015
		time.Date(2026, 7, 15, 2, 30, 0, 0, time.UTC),
	} {
		local := at.In(fiscal.Montevideo)
		if _, offset := local.Zone(); offset != -3*3600 {
			t.Errorf("%s: offset %d s, want -10800", at, offset)
		}
		if local.Day() != 14 {
			t.Errorf("%s is day %d in Montevideo, want 14 (the previous calendar day)", at, local.Day())
		}
	}
}
