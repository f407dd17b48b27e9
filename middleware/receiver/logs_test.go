package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// Every decision is one debug line with the scope, the key as stored and
// the outcome; with tracing on, the line's context carries the decision's
// span.
func TestReceiverLogsEachDecisionAtDebug(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	r, err := receiver.New(receiver.Config{Store: receivertest.NewMemory(t),
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context) ([]byte, error) { return []byte("done"), nil }
	for range 2 {
		if _, err := r.Execute(context.Background(), "charge", "pay-1", []byte("fp"), fn); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Execute(context.Background(), "charge", "pay-1", []byte("other"), fn); err == nil {
		t.Fatal("a reused key succeeded")
	}
	var outcomes []string
	for line := range bytes.Lines(logs.Bytes()) {
		var l struct{ Level, Msg, Scope, Key, Outcome, Err string }
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l.Msg != "receiver decision" || l.Level != "DEBUG" || l.Scope != "charge" || l.Key != "charge:pay-1" {
			t.Errorf("log line %s: want a debug receiver decision on charge:pay-1", line)
		}
		if (l.Err != "") != (l.Outcome == string(receiver.OutcomeFingerprintMismatch)) {
			t.Errorf("log line %s: want an error on the mismatch only", line)
		}
		outcomes = append(outcomes, l.Outcome)
	}
	want := []string{"processed", "duplicate", "fingerprint_mismatch"}
	if len(outcomes) != len(want) || outcomes[0] != want[0] || outcomes[1] != want[1] || outcomes[2] != want[2] {
		t.Errorf("decisions logged: %v, want %v", outcomes, want)
	}
}
