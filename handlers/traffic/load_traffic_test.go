package traffic

import "testing"

// A run of 1,000 sends at ratio 0.3 holds exactly 300 copies, each of a
// payment handed out before it; the first send is a new payment, and the
// run ends at its limit. Payments whose every send failed are uncertain,
// not unique.
func TestTrafficCopiesEarlierPayments(t *testing.T) {
	tr := newTraffic(0.3, 1000)
	var payments, copies int
	for n := range 1000 {
		i, ok := tr.next()
		switch {
		case !ok:
			t.Fatalf("send %d: traffic ended before its limit", n)
		case i == payments:
			payments++
		case i >= 0 && i < payments && n > 0:
			copies++
		default:
			t.Fatalf("send %d: payment %d handed out after %d payments", n, i, payments)
		}
		tr.done(i, i%7 != 0) // every send of every seventh payment fails
	}
	if _, ok := tr.next(); ok {
		t.Error("traffic went on past its limit")
	}
	if copies != 300 || payments != 700 {
		t.Errorf("%d copies of %d payments in 1000 sends at ratio 0.3, want 300 of 700", copies, payments)
	}
	unique, uncertain := tr.counts()
	if failing := int64((700 + 6) / 7); unique != 700-failing || uncertain != failing {
		t.Errorf("counts = %d unique, %d uncertain; want %d and %d", unique, uncertain, 700-failing, failing)
	}
}
