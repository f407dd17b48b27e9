package brokerenv

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceflow/onceflow/internal/testenv"
)

// DefaultNATSURL is the NATS server (with JetStream) tests use unless
// TEST_NATS_URL is set.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// NATSURL returns TEST_NATS_URL or DefaultNATSURL.
func NATSURL() string { return testenv.Getenv("TEST_NATS_URL", DefaultNATSURL) }

// NATS returns the URL of the NATS server tests use, after checking that it
// accepts a connection and has JetStream enabled. Tests must scope their
// streams and consumers (a unique TOPIC_PREFIX and SERVICE_NAME): the
// server is shared.
func NATS(t testing.TB) string {
	t.Helper()
	testenv.Integration(t)
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
		testenv.Unreachable(t, "NATS", testenv.RedactURL(u), err)
	}
	return u
}

// DeleteNATSStreamsOnCleanup deletes, when t ends, every stream on the
// NATS server at url whose name starts with prefix, and with them their
// consumers: they are stored on disk and would outlive the test on the
// shared server.
func DeleteNATSStreamsOnCleanup(t testing.TB, url, prefix string) {
	t.Helper()
	t.Cleanup(func() {
		nc, err := nats.Connect(url, nats.Timeout(5*time.Second), nats.NoReconnect())
		if err != nil {
			t.Errorf("deleting streams %s*: %v", prefix, err)
			return
		}
		defer nc.Close()
		js, err := nc.JetStream(nats.MaxWait(5 * time.Second))
		if err != nil {
			t.Errorf("deleting streams %s*: %v", prefix, err)
			return
		}
		for name := range js.StreamNames() {
			if strings.HasPrefix(name, prefix) {
				if err := js.DeleteStream(name); err != nil {
					t.Errorf("deleting stream %s: %v", name, err)
				}
			}
		}
	})
}

// NATSStreamMessages is how many messages the stream named stream holds on
// the NATS server at url.
func NATSStreamMessages(t testing.TB, url, stream string) uint64 {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.MaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	info, err := js.StreamInfo(stream)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
