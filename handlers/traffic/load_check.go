package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/onceflow/onceflow/handlers"
)

// ledgerSettle is how long the ledger's counts must stay still, once every
// payment sent is charged, before the check trusts them: copies still
// queued behind the last charge would show within it.
const ledgerSettle = time.Second

// LedgerCheck compares what a load run sent with what the service's ledger
// gained meanwhile (GET /v1/ledger/summary before and after). It assumes
// nothing else writes to that ledger during the run.
type LedgerCheck struct {
	// Unique is the payments sent; Uncertain those whose every send failed
	// (a failed send may still have reached the service).
	Unique, Uncertain int64
	// Gained is the ledger's growth: payments charged at least once,
	// charge rows, notification and receipt rows.
	Gained handlers.Summary
	// Waited is how long the check waited for the counts.
	Waited time.Duration
}

// OK reports whether every payment sent was charged exactly once: the
// ledger gained one payment per payment sent (up to the uncertain ones) and
// one charge per payment.
func (c LedgerCheck) OK() bool {
	g := c.Gained
	return g.Payments >= c.Unique && g.Payments <= c.Unique+c.Uncertain && g.Charges == g.Payments
}

// Verdict says in words whether, or how, the ledger disagrees.
func (c LedgerCheck) Verdict() string {
	g := c.Gained
	if c.OK() {
		return fmt.Sprintf("every one of the %d payments sent charged once", c.Unique)
	}
	v := fmt.Sprintf("%d payments sent, the ledger gained %d charged payments and %d charges within %v",
		c.Unique, g.Payments, g.Charges, c.Waited.Round(time.Millisecond))
	if missing := c.Unique - g.Payments; missing > 0 {
		v += fmt.Sprintf(": %d never charged", missing)
	}
	if extra := g.Payments - c.Unique - c.Uncertain; extra > 0 {
		v += fmt.Sprintf(": %d charged that were not sent (another producer on this service?)", extra)
	}
	if doubles := g.Charges - g.Payments; doubles > 0 {
		v += fmt.Sprintf(": %d charges more than one per payment", doubles)
	}
	return v
}

// String is the ledger's growth and the verdict, for the summary.
func (c LedgerCheck) String() string {
	g := c.Gained
	return fmt.Sprintf("+%d payments, +%d charges, +%d notifications, +%d receipts: %s",
		g.Payments, g.Charges, g.Notifications, g.Receipts, c.Verdict())
}

// awaitLedger polls the ledger summary until the service has charged the
// unique payments sent and its counts stayed still for ledgerSettle, or
// timeout passed, and returns the comparison. A summary that cannot be
// read counts as not there yet.
func awaitLedger(ctx context.Context, api *serviceClient, before handlers.Summary, unique, uncertain int64, timeout time.Duration) LedgerCheck {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := LedgerCheck{Unique: unique, Uncertain: uncertain}
	var still time.Time // since when the counts have not moved
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if now, err := api.ledgerSummary(ctx); err == nil {
			gained := handlers.Summary{
				Payments: now.Payments - before.Payments, Charges: now.Charges - before.Charges,
				Notifications: now.Notifications - before.Notifications, Receipts: now.Receipts - before.Receipts,
			}
			if gained != c.Gained || still.IsZero() {
				c.Gained, still = gained, time.Now()
			}
			charged := gained.Payments >= unique && gained.Charges >= unique
			if charged && time.Since(still) >= ledgerSettle {
				break
			}
		}
		select {
		case <-ctx.Done():
			c.Waited = time.Since(start)
			return c
		case <-tick.C:
		}
	}
	c.Waited = time.Since(start)
	return c
}

// ledgerSummary reads GET /v1/ledger/summary.
func (c *serviceClient) ledgerSummary(ctx context.Context) (handlers.Summary, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/ledger/summary", nil)
	if err != nil {
		return handlers.Summary{}, err
	}
	c.authorize(req)
	resp, err := c.client.Do(req)
	if err != nil {
		return handlers.Summary{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return handlers.Summary{}, fmt.Errorf("GET %s: status %s", req.URL, resp.Status)
	}
	var s handlers.Summary
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return handlers.Summary{}, fmt.Errorf("GET %s: decoding: %w", req.URL, err)
	}
	return s, nil
}
