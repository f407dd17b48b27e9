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
// redelivery window does: every request is charged, its record expires,
// and then a late copy of each arrives (a producer's retry, a redelivery
// from a replayed offset). Without effect keys each late copy is charged
// again: the row asserts exactly one double per request, in the ledger and
// at the provider, proving the records expired when DEDUP_TTL said and
// nothing else. With them the handler runs again, and neither the provider
// (which keeps a key 24 h) nor the ledger (which keeps a row's key as long
// as the row) does the effect twice. The short variant runs without keys.
func TestChaosTTLWindow(t *testing.T) {
	const transport = "amqp"
	needBroker(t, transport)
	svc := setUp(t)
	sc := chaosScale()
	sc.parallel(t)
	for _, noKeys := range []bool{false, true} {
		name := "lease-redis"
		if noKeys {
			name += "-no-effect-keys"
		} else if !sc.full {
			continue
		}
		t.Run(name, func(t *testing.T) {
			sc.parallel(t)
			setup := Setup{Transport: transport, Store: "redis", Mode: "lease", NoEffectKeys: noKeys, Env: []string{"DEDUP_TTL=" + shortTTL.String()}}
			ttlWindow(t, svc, sc, setup)
		})
	}
}

func ttlWindow(t *testing.T, svc Services, sc scale, setup Setup) {
	row := NewRow(t, svc, setup)
	row.Start(2)
	ids := row.IDs(sc.faultRequests)
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
	want := int64(len(ids)) // doubles, in the ledger and at the provider
	if !setup.NoEffectKeys {
		want = 0
	}
	f, err := waitRuns(row, 2*len(ids), want, sc.bound)
	res := Result{Run: t.Name(), Scenario: "TTL window", Transport: setup.Transport, Mode: setup.modeLabel(),
		Fault: fmt.Sprintf("DEDUP_TTL=%v; a second copy of each request after it", shortTTL), Sent: sent + late,
		Unique: len(ids), Figures: f, PeakRSS: row.PeakRSS(), Risk: riskShortTTL}
	res.Verdict = verdict(t, setup, len(ids), f, err)
	if res.Verdict == "ok" && (f.Doubles() != want || f.ProviderDoubles() != want) {
		t.Errorf("%d doubles in the ledger and %d at the provider, want %d each", f.Doubles(), f.ProviderDoubles(), want)
		res.Verdict = fmt.Sprintf("failed: %d doubles in the ledger and %d at the provider, want %d", f.Doubles(), f.ProviderDoubles(), want)
	}
	t.Logf("%s: sent %d, %+v, doubles %d in the ledger, %d at the provider", t.Name(), sent+late, f, f.Doubles(), f.ProviderDoubles())
	record(res)
}

// waitRuns waits until the charge route has run runs times in all (its
// "request charged" log lines: a run with effect keys adds no row, so the
// ledger cannot show it), the ledger holds a charge and a notice per
// request plus doubles, and the counts have stopped moving; at most
// within.
func waitRuns(row *Row, runs int, doubles int64, within time.Duration) (Figures, error) {
	deadline := time.Now().Add(within)
	want := int64(runs/2) + doubles
	for {
		f, err := row.Ledger()
		if err == nil && logCount(row, `"msg":"request charged"`) >= runs && f.Charges.Rows >= want && f.Notices.Rows >= want {
			time.Sleep(2 * time.Second)
			return row.Ledger()
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("%w: %d of %d charges after %v", ErrStalled, f.Charges.Rows, want, within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
