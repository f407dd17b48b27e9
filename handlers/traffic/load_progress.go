package traffic

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressEvery is how often a load run without a terminal prints a line.
const progressEvery = 5 * time.Second

// showProgress displays the run's progress on opts.Progress until the
// returned stop is called: a bar (over --count when set, else over
// --duration) redrawn a few times a second when ProgressBar is set, a
// plain line every progressEvery otherwise, nothing when Progress is nil.
// stop clears the bar.
func showProgress(opts LoadOptions, c *loadCounters, start time.Time) (stop func()) {
	if opts.Progress == nil {
		return func() {}
	}
	every, draw, done := progressEvery, func(string) {}, func() {}
	describe := func() string {
		sent, failed := c.sent.Load(), c.failed.Load()
		return fmt.Sprintf("sent %d (%.0f/s), %d errors", sent, float64(sent)/time.Since(start).Seconds(), failed)
	}
	if opts.ProgressBar {
		total := opts.Duration.Milliseconds()
		if opts.Count > 0 {
			total = opts.Count
		}
		bar := progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(opts.Progress),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionClearOnFinish(),
		)
		every = 200 * time.Millisecond
		draw = func(desc string) {
			bar.Describe(desc)
			if opts.Count > 0 {
				_ = bar.Set64(c.sent.Load() + c.failed.Load())
			} else {
				_ = bar.Set64(min(total, time.Since(start).Milliseconds()))
			}
		}
		done = func() { _ = bar.Finish() }
	} else {
		draw = func(desc string) {
			fmt.Fprintf(opts.Progress, "load: %v: %s\n", time.Since(start).Round(time.Second), desc)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				draw(describe())
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		done()
	}
}
