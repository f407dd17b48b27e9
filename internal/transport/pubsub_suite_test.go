package transport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/internal/testenv"
)

// suiteDefaultInFlight is the service's default in-flight count per
// handler (HANDLER_CONCURRENCY); TestSuiteInFlightIsTheService checks it,
// through SuiteDefaultInFlight (app imports this package, so only the
// external test package may import app).
const suiteDefaultInFlight = 16

// SuiteDefaultInFlight is suiteDefaultInFlight for the external tests.
const SuiteDefaultInFlight = suiteDefaultInFlight

// suiteTransport is a transport as Watermill's Pub/Sub suite meets it.
type suiteTransport struct {
	// config is the transport's configuration for one run of the suite:
	// its topics, groups and queues are the run's own.
	config func(t *testing.T) Config
	// features are what the suite may expect of the transport when each
	// subscriber holds inFlight messages at once.
	features func(inFlight int) tests.Features
	// skip names the suite's tests that cannot pass on the transport, with
	// why; the suite's other tests run.
	skip map[string]string
	// publisher, when not nil, adapts the transport's publisher to what
	// the suite publishes.
	publisher func(message.Publisher) message.Publisher
}

// Watermill's own Pub/Sub suite (watermill/pubsub/tests) on every
// transport as the service builds it: [New] with the run's configuration,
// a handler's [Transport.Subscriber] as the subscriber, holding one
// message at a time and then the service's default, and the transport's
// [Transport.Publisher]. Each constructor call is a new instance of the
// service — a replica — subscribing as the handler "suite", and the
// suite's consumer group constructor a handler named after the group.
// The counts are the suite's short ones unless PUBSUB_SUITE_LONG=1.
func TestPubSubSuite(t *testing.T) {
	for _, name := range Kinds {
		st := suiteTransports[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, inFlight := range []int{1, suiteDefaultInFlight} {
				t.Run(fmt.Sprintf("in-flight-%d", inFlight), func(t *testing.T) {
					t.Parallel()
					runSuite(t, st, inFlight)
				})
			}
		})
	}
}

// runSuite runs Watermill's suite once on st, with inFlight messages in
// flight per subscriber.
func runSuite(t *testing.T, st suiteTransport, inFlight int) {
	constructor := suiteConstructor(st, st.config(t), inFlight)
	tests.TestPubSub(t, suiteFeatures(st, inFlight),
		func(t *testing.T) (message.Publisher, message.Subscriber) { return constructor(t, "suite") },
		constructor,
	)
}

// suiteFeatures are st's features with inFlight messages in flight, and
// the suite's short message counts unless PUBSUB_SUITE_LONG=1 asks for
// its full ones, thousands per test.
func suiteFeatures(st suiteTransport, inFlight int) tests.Features {
	features := st.features(inFlight)
	features.ForceShort = testenv.Getenv("PUBSUB_SUITE_LONG", "") != "1"
	return features
}

// suiteConstructor returns the suite's consumer group constructor for st
// configured by cfg: a new transport, closed when the test ends, and the
// subscriber of the handler named after the group, holding inFlight
// messages. It skips the suite's tests st skips.
func suiteConstructor(st suiteTransport, cfg Config, inFlight int) tests.ConsumerGroupPubSubConstructor {
	return func(t *testing.T, handler string) (message.Publisher, message.Subscriber) {
		t.Helper()
		if reason, ok := st.skip[suiteTestName(t)]; ok {
			t.Skip(reason)
		}
		tr := newTestTransport(t, cfg)
		sub, err := tr.Subscriber(handler, inFlight)
		if err != nil {
			t.Fatal(err)
		}
		pub := tr.Publisher()
		if st.publisher != nil {
			pub = st.publisher(pub)
		}
		return pub, sub
	}
}

// Watermill's TestConcurrentClose and TestContinueAfterSubscribeClose,
// which the suite runs only for a pub/sub that does not declare
// exactly-once delivery, on the persistent transports that declare it
// (SQL), reading as for one that does not (duplicates dropped):
// they check what every transport owes, that closing subscribers, also
// several at once, loses no message.
func TestPubSubSuiteClosing(t *testing.T) {
	for _, name := range Kinds {
		st := suiteTransports[name]
		if f := st.features(1); !f.ExactlyOnceDelivery || !f.Persistent {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, inFlight := range []int{1, suiteDefaultInFlight} {
				t.Run(fmt.Sprintf("in-flight-%d", inFlight), func(t *testing.T) {
					t.Parallel()
					features := suiteFeatures(st, inFlight)
					features.ExactlyOnceDelivery = false
					constructor := suiteConstructor(st, st.config(t), inFlight)
					replica := func(t *testing.T) (message.Publisher, message.Subscriber) { return constructor(t, "suite") }
					for name, test := range map[string]func(*testing.T, tests.TestContext, tests.PubSubConstructor){
						"TestConcurrentClose":             tests.TestConcurrentClose,
						"TestContinueAfterSubscribeClose": tests.TestContinueAfterSubscribeClose,
					} {
						t.Run(name, func(t *testing.T) {
							t.Parallel()
							tc := tests.TestContext{TestID: tests.NewTestID(), Features: features}
							t.Run(string(tc.TestID), func(t *testing.T) { test(t, tc, replica) })
						})
					}
				})
			}
		})
	}
}

// suiteTestName is the name of the suite's test that t runs in: the suite
// runs each as name/ID.
func suiteTestName(t *testing.T) string {
	parts := strings.Split(t.Name(), "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2]
}
