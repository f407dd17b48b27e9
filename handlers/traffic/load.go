package traffic

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
)

// LoadOptions says what the load command sends. Validate names the flag of
// each field it rejects.
type LoadOptions struct {
	// Rate is the sends per second; 0 sends as fast as Concurrency allows.
	Rate float64
	// Duration is how long to send. Required.
	Duration time.Duration
	// Count, when positive, stops the run after that many sends, even
	// before Duration.
	Count int64
	// Concurrency is how many sends are in flight at once.
	Concurrency int
	// DupRatio, in [0, 1), is the fraction of sends that are copies of an
	// earlier payment: same payment id, same payload.
	DupRatio float64
	// Transport, when set, overrides TRANSPORT.
	Transport string
	// ServiceURL is the running service: where the in-process transport's
	// sends go and whose ledger Check reads. Default: HTTP_ADDR's.
	ServiceURL string
	// Check, after sending, waits until the service has charged what was
	// sent and its counts stop moving (at most CheckTimeout), and fails
	// unless its ledger gained one charge per payment sent.
	Check bool
	// CheckTimeout bounds that wait. Default 60s.
	CheckTimeout time.Duration
	// Progress, when not nil, receives progress while sending: a bar when
	// ProgressBar is set (a terminal), otherwise a line every 5 s.
	Progress    io.Writer
	ProgressBar bool
}

// Validate checks the options, Transport against the values TRANSPORT
// allows (transports); its error names the flag and the values it allows,
// in one line.
func (o LoadOptions) Validate(transports []string) error {
	switch {
	case o.Rate < 0:
		return fmt.Errorf("--rate=%v is not allowed: use 0 (as fast as possible) or a positive number of messages per second", o.Rate)
	case o.Duration <= 0:
		return fmt.Errorf("--duration=%v is not allowed: use a positive duration such as 30s or 2m", o.Duration)
	case o.Count < 0:
		return fmt.Errorf("--count=%d is not allowed: use 0 (no limit) or a positive number of messages", o.Count)
	case o.Concurrency < 1:
		return fmt.Errorf("--concurrency=%d is not allowed: use 1 or more sends in flight", o.Concurrency)
	case o.DupRatio < 0 || o.DupRatio >= 1:
		return fmt.Errorf("--dup-ratio=%v is not allowed: use a fraction from 0 up to, not including, 1 (0.2: one send in five is a copy)", o.DupRatio)
	case o.Transport != "" && !slices.Contains(transports, o.Transport):
		return fmt.Errorf("--transport=%q is not allowed: use one of %s", o.Transport, strings.Join(transports, ", "))
	case o.CheckTimeout < 0:
		return fmt.Errorf("--check-timeout=%v is not allowed: use a positive duration such as 60s", o.CheckTimeout)
	}
	if o.ServiceURL != "" {
		if u, err := url.Parse(o.ServiceURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--service-url=%q is not allowed: use an http:// or https:// URL such as http://127.0.0.1:8080", o.ServiceURL)
		}
	}
	return nil
}

// LoadResult is what a load run did.
type LoadResult struct {
	// Sent counts the sends that succeeded; Unique the distinct payments
	// among them, and Duplicates the rest (Sent = Unique + Duplicates).
	Sent, Unique, Duplicates int64
	// Errors counts the sends that failed; FirstError is the first of them.
	Errors     int64
	FirstError error
	// Elapsed is the time from the first send to the last answer; Rate is
	// Sent per second of it.
	Elapsed time.Duration
	Rate    float64
	// P50, P99 and Max are the publish latency of the successful sends: an
	// HTTP round trip through the API, or a publish acknowledged by the
	// broker.
	P50, P99, Max time.Duration
	// Ledger is the check's finding; nil without Check.
	Ledger *LedgerCheck
}

// Load sends payments to a running service for a while, at a rate, with a
// fraction of copies, prints a summary to out, and with opts.Check checks
// that the service charged every payment once.
//
// The sends go where Publish sends: with a broker transport straight to the
// broker as PaymentRequested events, as another team's producer would; with
// the in-process transport through the service's HTTP API, one request with
// its own Idempotency-Key per copy (so every copy reaches the message
// receiver; the latency then includes the handling, which on gochannel is
// part of publishing).
//
// It returns an error when options or configuration are invalid, the
// service cannot be reached for the check, the run was interrupted, a send
// failed, or the ledger disagrees; the result holds what was done.
func Load(ctx context.Context, env domain.CommandEnv, opts LoadOptions, out io.Writer) (LoadResult, error) {
	if err := opts.Validate(env.Transports); err != nil {
		return LoadResult{}, err
	}
	if opts.CheckTimeout == 0 {
		opts.CheckTimeout = 60 * time.Second
	}
	environ := env.Environ
	if opts.Transport != "" {
		environ = append(slices.Clip(environ), "TRANSPORT="+opts.Transport)
	}
	cfg, err := env.Settings(environ)
	if err != nil {
		return LoadResult{}, err
	}
	base := opts.ServiceURL
	if base == "" {
		base = cfg.URL
	}
	base = strings.TrimRight(base, "/")
	api := newServiceClient(base, cfg.APIKey, opts.Concurrency)

	send, target := api.createPayment, "through "+base
	if cfg.Transport != "gochannel" {
		p, err := openProducer(ctx, cfg, "")
		if err != nil {
			return LoadResult{}, err
		}
		defer p.Close()
		send, target = p.publish, "to "+p.String()
	}

	var before handlers.Summary
	if opts.Check {
		if before, err = api.ledgerSummary(ctx); err != nil {
			return LoadResult{}, fmt.Errorf("reading the ledger before sending (--check; start the service, point --service-url at it, or pass --check=false): %w", err)
		}
	}

	tr := newTraffic(opts.DupRatio, opts.Count)
	res := runLoad(ctx, opts, tr, send)
	var uncertain int64
	res.Unique, uncertain = tr.counts()
	res.Duplicates = res.Sent - res.Unique
	printLoad(out, opts, res, target)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("interrupted after %d sends, ledger not checked: %w", res.Sent, err)
	}

	if opts.Check {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "waiting up to %v for the service to charge %d payments...\n", opts.CheckTimeout, res.Unique)
		}
		c := awaitLedger(ctx, api, before, res.Unique, uncertain, opts.CheckTimeout)
		res.Ledger = &c
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("interrupted while checking the ledger: %w", err)
		}
		fmt.Fprintf(out, "ledger at %s: %s\n", base, c)
		if !c.OK() {
			return res, fmt.Errorf("ledger mismatch: %s", c.Verdict())
		}
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("%d of %d sends failed, the first: %w", res.Errors, res.Sent+res.Errors, res.FirstError)
	}
	return res, nil
}

// printLoad writes the run's summary: what was sent, how fast, and the
// publish latency.
func printLoad(out io.Writer, opts LoadOptions, res LoadResult, target string) {
	goal := "as fast as possible"
	if opts.Rate > 0 {
		goal = fmt.Sprintf("--rate %g", opts.Rate)
	}
	fmt.Fprintf(out, "sent %d messages in %v (%.1f/s, %s) %s: %d unique payments, %d duplicates, %d errors\n",
		res.Sent, res.Elapsed.Round(time.Millisecond), res.Rate, goal, target, res.Unique, res.Duplicates, res.Errors)
	if res.Sent > 0 {
		fmt.Fprintf(out, "publish latency: p50 %v, p99 %v, max %v\n", res.P50, res.P99, res.Max)
	}
	if res.FirstError != nil {
		fmt.Fprintf(out, "first error: %v\n", res.FirstError)
	}
}
