package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// shortTTL is the DEDUP_TTL of the TTL-window row: records expire this long
// after they are completed.
const shortTTL = 5 * time.Second

// TestChaosTTLWindow shows what a DEDUP_TTL shorter than the broker's
// redelivery window does: every payment is charged, its record expires,
// and then a late copy of each arrives (a producer's retry, a redelivery
// from a replayed offset). Each late copy is charged again: the row
// asserts exactly one double per payment, proving the records expired
// when DEDUP_TTL said and nothing else, and reports it.
func TestChaosTTLWindow(t *testing.T) {
	svc := setUp(t)
	sc := chaosScale()
	sc.parallel(t)
	const transport = "amqp"
	setup := Setup{Transport: transport, Store: "redis", Mode: "lease", Env: []string{"DEDUP_TTL=" + shortTTL.String()}}
	row := NewRow(t, svc, setup)
	row.Start(2)
	ids := row.IDs(sc.faultPayments)
	sent, err := row.Publish(context.Background(), ids, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := row.WaitFinished(len(ids), 2*time.Second, sc.bound); err != nil {
		t.Fatal(err)
	}
	time.Sleep(shortTTL + time.Second) // every record has expired
	late, err := row.Publish(context.Background(), ids, 1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := waitCharges(row, 2*len(ids), sc.bound)
	res := Result{Run: t.Name(), Scenario: "TTL window", Transport: transport, Mode: setup.modeLabel(),
		Fault: fmt.Sprintf("DEDUP_TTL=%v; a second copy of each payment after it", shortTTL), Sent: sent + late,
		Unique: len(ids), Figures: f, PeakRSS: row.PeakRSS(), Risk: riskShortTTL}
	res.Verdict = verdict(t, setup, len(ids), f, err)
	if res.Verdict == "ok" && f.Doubles() != len(ids) {
		t.Errorf("%d doubles, want one per payment (%d): records must expire after DEDUP_TTL", f.Doubles(), len(ids))
		res.Verdict = fmt.Sprintf("failed: %d doubles, want %d", f.Doubles(), len(ids))
	}
	t.Logf("%s: sent %d, %+v, doubles %d", t.Name(), sent+late, f, f.Doubles())
	record(res)
}

// waitCharges waits until the row's ledger holds at least want charges and
// has stopped moving, at most within.
func waitCharges(row *Row, want int, within time.Duration) (Figures, error) {
	deadline := time.Now().Add(within)
	for {
		f, err := row.Ledger()
		if err == nil && f.Charges >= want && f.Notifications >= want {
			time.Sleep(2 * time.Second)
			return row.Ledger()
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("%w: %d of %d charges after %v", ErrStalled, f.Charges, want, within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
