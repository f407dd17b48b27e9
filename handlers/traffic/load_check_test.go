package traffic

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/handlers"
)

// The check passes only when the ledger gained one charged payment and one
// charge per payment sent; payments whose every send failed may or may not
// have been charged.
func TestLedgerCheckVerdict(t *testing.T) {
	for _, tc := range []struct {
		unique, uncertain int64
		gained            handlers.Summary
		ok                bool
		want              string
	}{
		{10, 0, handlers.Summary{Payments: 10, Charges: 10}, true, "every one of the 10 payments sent charged once"},
		{10, 2, handlers.Summary{Payments: 11, Charges: 11}, true, "every one of the 10 payments sent charged once"},
		{10, 0, handlers.Summary{Payments: 10, Charges: 12}, false, "2 charges more than one per payment"},
		{10, 0, handlers.Summary{Payments: 7, Charges: 7}, false, "3 never charged"},
		{10, 1, handlers.Summary{Payments: 13, Charges: 13}, false, "2 charged that were not sent"},
		{10, 0, handlers.Summary{}, false, "10 payments sent, the ledger gained 0 charged payments and 0 charges"},
	} {
		c := LedgerCheck{Unique: tc.unique, Uncertain: tc.uncertain, Gained: tc.gained}
		if c.OK() != tc.ok || !strings.Contains(c.Verdict(), tc.want) {
			t.Errorf("%d sent (%d uncertain), gained %+v: OK %v, %q; want %v and %q",
				tc.unique, tc.uncertain, tc.gained, c.OK(), c.Verdict(), tc.ok, tc.want)
		}
	}
}
