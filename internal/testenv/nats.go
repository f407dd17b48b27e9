package testenv

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultNATSURL is the NATS server (with JetStream) tests use unless
// TEST_NATS_URL is set.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// NATSURL returns TEST_NATS_URL or DefaultNATSURL.
func NATSURL() string { return Getenv("TEST_NATS_URL", DefaultNATSURL) }

// NATS returns the URL of the NATS server tests use, after checking that it
// accepts a connection and has JetStream enabled. Tests must scope their
// streams and consumers (a unique TOPIC_PREFIX and SERVICE_NAME): the
// server is shared.
func NATS(t testing.TB) string {
	t.Helper()
	Integration(t)
	u := NATSURL()
	nc, err := nats.Connect(u, nats.Timeout(5*time.Second), nats.NoReconnect())
	if err == nil {
		defer nc.Close()
		var js nats.JetStreamContext
		if js, err = nc.JetStream(); err == nil {
			_, err = js.AccountInfo()
		}
	}
	if err != nil {
		Unreachable(t, "NATS", redactURL(u), err)
	}
	return u
}
