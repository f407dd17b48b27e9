package transport

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// The service's topics and key metadata, as the tests use them.
const (
	topicRequested = "payments.requested"
	topicCharged   = "payments.charged"
	topicPoison    = "poison"
	keyMetadata    = DefaultKeyMetadata
)

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, what, cond)
}

// newTestTransport is New(cfg), closed when the test ends.
func newTestTransport(t *testing.T, cfg Config) *Transport {
	t.Helper()
	tr, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("closing transport: %v", err)
		}
	})
	return tr
}
