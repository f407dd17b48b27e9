package traffic

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
)

// PublishOptions says what the publish command sends.
type PublishOptions struct {
	// Count is how many distinct payments to send.
	Count int
	// Duplicates is how many extra copies of each payment to send.
	Duplicates int
	// Concurrency is how many sends are in flight at once. Default 8.
	Concurrency int
	// Topic is where a broker transport publishes. Default
	// payments.requested; not used with the in-process transport.
	Topic string
}

// Publish is the duplicate demo: it sends Count payments, each 1+Duplicates
// times with the same payment id (the message idempotency key) and the same
// payload, and prints what it sent.
//
// With a broker transport it publishes PaymentRequested events straight to
// the broker, as another team's producer would. With the in-process
// transport another process cannot reach the service's channel, so it sends
// through the running service's HTTP API at HTTP_ADDR, one request per copy
// with its own Idempotency-Key: every copy reaches the message receiver,
// which must charge each payment once.
func Publish(ctx context.Context, env domain.CommandEnv, opts PublishOptions, out io.Writer) error {
	cfg, err := env.Settings(env.Environ)
	if err != nil {
		return err
	}
	if opts.Count < 1 || opts.Duplicates < 0 {
		return fmt.Errorf("--count must be at least 1 and --duplicates at least 0")
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = 8
	}
	if cfg.Transport != "gochannel" {
		return publishToBroker(ctx, cfg, opts, out)
	}
	if opts.Topic != "" {
		return fmt.Errorf("--topic needs a broker transport: with TRANSPORT=gochannel publish sends through the HTTP API")
	}
	base := cfg.URL
	api := newServiceClient(base, cfg.APIKey, 0)
	run, err := sendCopies(ctx, opts, api.createPayment)
	if err != nil {
		return err
	}
	sent := opts.Count * (1 + opts.Duplicates)
	fmt.Fprintf(out, "sent %d messages: %d payments (pay-%s-1 .. pay-%s-%d) x %d copies, through %s\n",
		sent, opts.Count, run, run, opts.Count, 1+opts.Duplicates, base)
	fmt.Fprintf(out, "responses by status: %v\n", api.statuses())
	fmt.Fprintf(out, "expect %d charges: see %s/v1/ledger/summary\n", opts.Count, base)
	return nil
}

// sendCopies is the demo's traffic: Count payments of a fresh run, each
// sent 1+Duplicates times, at most Concurrency at once, through send. It
// returns the run id that names the payments pay-<run>-1 .. pay-<run>-Count.
func sendCopies(ctx context.Context, opts PublishOptions, send func(context.Context, handlers.Payment) error) (string, error) {
	run := newRunID()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i := range opts.Count {
		p := demoPayment(run, i)
		for range 1 + opts.Duplicates {
			g.Go(func() error {
				if err := send(ctx, p); err != nil {
					return fmt.Errorf("sending %s: %w", p.ID, err)
				}
				return nil
			})
		}
	}
	return run, g.Wait()
}

// newRunID names a run of generated payments, so that runs never share a
// payment id.
func newRunID() string { return uuid.NewString()[:8] }

// demoPayment is the i-th (from 0) generated payment of run: id
// pay-<run>-<i+1>, one of ten customers, an amount that differs per payment.
// The same run and i always give the same payment, so every copy of it
// carries the same payload.
func demoPayment(run string, i int) handlers.Payment {
	return handlers.Payment{
		ID: fmt.Sprintf("pay-%s-%d", run, i+1), CustomerID: fmt.Sprintf("cust-%d", i%10+1),
		AmountCents: int64(1000 + i), Currency: "EUR",
	}
}
