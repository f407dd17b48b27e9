// Command bench runs the performance plan of internal/bench, and the flow
// comparisons of internal/bench/flow (every transport with the receiver on
// and off and at one message in flight, swept over the messages in
// flight; the whole service on every broker; lease against transaction
// mode; the HTTP middleware's latency): onceflow side by side with its
// references, in one run, medians of interleaved rounds. It prints each
// table as it goes and one TARGET line per target at the end, and with
// -out writes the report (and the sweeps' plots beside it).
//
//	cd tools && go run ./cmd/bench -size short|full [-out ../docs/PERFORMANCE.md]
//
// Services come from TEST_REDIS_ADDR (also the Redis of the redisstream
// transport), TEST_DATABASE_URL, TEST_AMQP_URL and TEST_NATS_URL,
// defaulting to the loopback ones the tests use; Kafka is an in-process
// broker the run starts. It exits 1 when the run failed and 0
// otherwise, whatever the verdicts: a script reads the TARGET lines.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
