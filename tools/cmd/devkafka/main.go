// Command devkafka runs a Kafka-protocol broker in process, for developing
// and demonstrating TRANSPORT=kafka without installing Kafka or Docker:
//
//	cd tools && go run ./cmd/devkafka    # listens on 127.0.0.1:9092
//	TRANSPORT=kafka KAFKA_BROKERS=127.0.0.1:9092 make run   # at the root
//
// The broker is kfake, from franz-go (see internal/testenv/brokerenv/kfakebroker): one broker,
// topics created on demand, consumer groups, everything in memory and gone
// when the command exits (SIGINT or SIGTERM). It is for development only, never a production
// broker, and the service never imports it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv/kfakebroker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "devkafka:", err)
		os.Exit(1)
	}
}

// run serves the broker until ctx ends. It prints the address it listens on
// and how to point the service at it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("devkafka", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "host:port to listen on and advertise to clients (port 0 picks a free one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", *addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("-addr %q: name a host clients can reach, such as 127.0.0.1: the broker advertises it", *addr)
	}

	cluster, err := kfakebroker.NewCluster(*addr, "onceflow-dev")
	if err != nil {
		return fmt.Errorf("starting the broker on %s: %w", *addr, err)
	}
	defer cluster.Close()

	brokers := cluster.ListenAddrs()[0]
	fmt.Fprintf(stdout, "Kafka-protocol broker (kfake, in memory) listening on %s\n", brokers)
	fmt.Fprintf(stdout, "Run the service against it:\n  TRANSPORT=kafka KAFKA_BROKERS=%s make run\n", brokers)
	fmt.Fprintln(stdout, "Stop with Ctrl-C; every topic and offset is lost.")
	<-ctx.Done()
	return nil
}
