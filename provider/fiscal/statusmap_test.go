package fiscal_test

import (
	"testing"

	"github.com/onceflow/onceflow/provider/fiscal"
)

func TestParseStatusMap(t *testing.T) {
	t.Parallel()
	got, err := fiscal.ParseStatusMap(" 4=pending_dgi, 5=authorized ,3=rejected,6=voided")
	if err != nil || len(got) != 4 || got["5"] != fiscal.StatusAuthorized || got["4"] != fiscal.StatusPendingDGI {
		t.Fatalf("ParseStatusMap = %v, %v", got, err)
	}
	for _, bad := range []string{"", "5", "=authorized", "5=issued", "5=needs_attention"} {
		if _, err := fiscal.ParseStatusMap(bad); err == nil {
			t.Errorf("fiscal.ParseStatusMap(%q) accepted", bad)
		}
	}
}
