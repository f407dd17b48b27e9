package chaos

import (
	"context"
	"fmt"
	"time"
)

// Outage is what one outage row measured.
type Outage struct {
	Sent int
	// ReadyDuring is whether /readyz of the row's Victim answered 200
	// in the middle of the outage; ReadyAfter, within 30 s after it.
	ReadyDuring, ReadyAfter bool
	// Resumed is the time from the service returning until the ledger's
	// charges next increased; 0 when nothing was left to charge.
	Resumed time.Duration
}

// RunOutage starts two instances, publishes ids with copies in the
// background, and once a tenth of them are charged breaks something with
// down, keeps it broken for hold, and mends it with up. It waits for the
// publishing to end before it returns.
func (r *Row) RunOutage(ids []string, copies int, hold time.Duration, down, up func() error) (Outage, error) {
	r.Start(2)
	var o Outage
	published := make(chan error, 1)
	go func() {
		var err error
		o.Sent, err = r.Publish(context.Background(), ids, copies)
		published <- err
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for f, _ := r.Ledger(); f.Charges.IDs < int64(len(ids)/10); f, _ = r.Ledger() {
		if time.Now().After(deadline) {
			return o, fmt.Errorf("%w: %d of %d requests charged before the outage", ErrStalled, f.Charges.IDs, len(ids))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := down(); err != nil {
		return o, fmt.Errorf("starting the outage: %w", err)
	}
	time.Sleep(hold / 2)
	o.ReadyDuring = r.Instances[r.Victim].Ready()
	time.Sleep(hold - hold/2)
	before, _ := r.Ledger()
	if err := up(); err != nil {
		return o, fmt.Errorf("ending the outage: %w", err)
	}
	back := time.Now()
	for time.Since(back) < time.Minute {
		f, err := r.Ledger()
		if err == nil && f.Charges.Rows > before.Charges.Rows {
			o.Resumed = time.Since(back)
			break
		}
		if err == nil && f.Charges.IDs >= int64(len(ids)) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	o.ReadyAfter = r.Instances[r.Victim].WaitReady(30*time.Second) == nil
	return o, <-published
}

// Settle returns the row's figures once it has finished after a fault
// that went as planned (err nil): WaitFinished with the counts stable for
// 6 s, at most within. After a fault that failed (err) it returns the
// figures as they are, and err.
func (r *Row) Settle(unique int, err error, within time.Duration) (Figures, error) {
	if err != nil {
		f, _ := r.Ledger()
		return f, err
	}
	f, _, err := r.WaitFinished(unique, 6*time.Second, within)
	return f, err
}

// readinessProblems is what the outage's /readyz answers got wrong: ready
// in the middle of the outage, or not ready again after it.
func (o Outage) readinessProblems() []string {
	var problems []string
	if o.ReadyDuring {
		problems = append(problems, "/readyz answered 200 during the outage")
	}
	if !o.ReadyAfter {
		problems = append(problems, "/readyz not 200 within 30s after the outage")
	}
	return problems
}
