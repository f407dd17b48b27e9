package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/onceflow/onceflow/internal/testenv"
)

// The broker starts on a free port, a sarama client finds it there, and the
// command ends cleanly when its context does.
func TestRunServesKafka(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	out := &testenv.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, out, out) }()

	addrLine := regexp.MustCompile(`KAFKA_BROKERS=(127\.0\.0\.1:\d+) make run`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if m := addrLine.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no KAFKA_BROKERS line printed; output: %q", out.String())
		}
	}

	client, err := sarama.NewClient([]string{addr}, sarama.NewConfig())
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	brokers := client.Brokers()
	if len(brokers) != 1 || brokers[0].Addr() != addr {
		t.Errorf("brokers %v, want the one at %s", brokers, addr)
	}
	_ = client.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v, want a clean stop", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

// An address clients could not connect to is refused before anything
// starts.
func TestRunRejectsAnUnreachableAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9092", ":9092", "nonsense"} {
		var out bytes.Buffer
		if err := run(t.Context(), []string{"-addr", addr}, &out, &out); err == nil {
			t.Errorf("-addr %s: run started, want an error", addr)
		}
	}
}
