package adminapi_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/console/internal/adminapi"
)

func TestCaseFilter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	amount := int64(12200)
	k := cases.View{PSP: "dlocal", AmountMinor: &amount, OpenedAt: now.Add(-3 * time.Hour).Format(time.RFC3339Nano)}
	for _, tc := range []struct {
		name string
		f    adminapi.CaseFilter
		want bool
	}{
		{"none", adminapi.CaseFilter{}, true},
		{"psp", adminapi.CaseFilter{PSP: "DLOCAL"}, true},
		{"other psp", adminapi.CaseFilter{PSP: "stripe"}, false},
		{"old enough", adminapi.CaseFilter{MinAge: 2 * time.Hour}, true},
		{"too young", adminapi.CaseFilter{MinAge: 4 * time.Hour}, false},
		{"in range", adminapi.CaseFilter{MinAmount: 12000, MaxAmount: 12200}, true},
		{"below", adminapi.CaseFilter{MinAmount: 12201}, false},
		{"above", adminapi.CaseFilter{MaxAmount: 12199}, false},
	} {
		if got := tc.f.Match(k, now); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
	if (adminapi.CaseFilter{MinAmount: 1}).Match(cases.View{}, now) {
		t.Error("a case without an amount passed an amount filter")
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	parked := cases.View{Kind: cases.ParkedOutboxRow, Actions: []string{}}
	if got := adminapi.Actions(parked); len(got) != 1 || got[0] != cases.ActionUnpark {
		t.Errorf("parked outbox row: %v, want unpark (through the relay)", got)
	}
	closed := cases.View{Kind: cases.NeedsAttention, ClosedAt: "2026-12-01T00:00:00Z", Actions: []string{"retry"}}
	if got := adminapi.Actions(closed); len(got) != 0 {
		t.Errorf("closed case: %v, want none", got)
	}
}
