package emit

import (
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Only a refusal counts; an attempt the provider did not judge the document
// in keeps the count; any other outcome ends the run of refusals.
func TestSaveCountsRefusalsOnlyWhereTheProviderJudged(t *testing.T) {
	for outcome, want := range map[string]struct{ refused, kept bool }{
		"refused":               {refused: true},
		"unavailable":           {kept: true},
		"lookup_failed":         {kept: true},
		"build_failed":          {kept: true},
		"exchange_rate_missing": {kept: true},
		"waiting_for_invoice":   {kept: true},
		"sent":                  {},
		"adopted":               {},
		"unknown":               {},
		"settling":              {},
	} {
		got := toSave(store.Document{ID: 1}, uuid.New(), result{outcome: outcome})
		if got.Refused != want.refused || got.Unavailable != want.kept {
			t.Errorf("%s: refused %v, refusals kept %v; want %v, %v", outcome, got.Refused, got.Unavailable, want.refused, want.kept)
		}
	}
}
