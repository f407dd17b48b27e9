package transporttest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/internal/testenv"
)

// DefaultInFlight is the service's default in-flight count per handler
// (HANDLER_CONCURRENCY), at which the suite runs the transports;
// TestSuiteInFlightIsTheService checks it.
const DefaultInFlight = 16

// Suite is a transport as Watermill's Pub/Sub suite meets it.
type Suite struct {
	// Open returns how to open an instance of the transport for one run
	// of the suite, whose topics, groups and queues are the run's own.
	Open func(t *testing.T) Opener
	// Features are what the suite may expect of the transport when each
	// subscriber holds inFlight messages at once.
	Features func(inFlight int) tests.Features
	// Skip names the suite's tests that cannot pass on the transport, with
	// why; the suite's other tests run.
	Skip map[string]string
	// Publisher, when not nil, adapts the transport's publisher to what
	// the suite publishes.
	Publisher func(message.Publisher) message.Publisher
}

// RunPubSubSuite runs Watermill's own Pub/Sub suite
// (watermill/pubsub/tests) on st as the service builds it: an instance
// opened with the run's configuration, a handler's
// [broker.Transport.Subscriber] as the subscriber, holding one message at
// a time and then DefaultInFlight, and the transport's
// [broker.Transport.Publisher]. Each constructor call is a new instance
// of the service — a replica — subscribing as the handler "suite", and
// the suite's consumer group constructor a handler named after the group.
// The counts are the suite's short ones unless PUBSUB_SUITE_LONG=1.
func RunPubSubSuite(t *testing.T, st Suite) {
	for _, inFlight := range []int{1, DefaultInFlight} {
		t.Run(fmt.Sprintf("in-flight-%d", inFlight), func(t *testing.T) {
			t.Parallel()
			runSuite(t, st, inFlight)
		})
	}
}

// runSuite runs Watermill's suite once on st, with inFlight messages in
// flight per subscriber.
func runSuite(t *testing.T, st Suite, inFlight int) {
	constructor := suiteConstructor(st, st.Open(t), inFlight)
	tests.TestPubSub(t, suiteFeatures(st, inFlight),
		func(t *testing.T) (message.Publisher, message.Subscriber) { return constructor(t, "suite") },
		constructor,
	)
}

// suiteFeatures are st's features with inFlight messages in flight, and
// the suite's short message counts unless PUBSUB_SUITE_LONG=1 asks for
// its full ones, thousands per test.
func suiteFeatures(st Suite, inFlight int) tests.Features {
	features := st.Features(inFlight)
	features.ForceShort = testenv.Getenv("PUBSUB_SUITE_LONG", "") != "1"
	return features
}

// suiteConstructor returns the suite's consumer group constructor for st
// opened with open: a new transport, closed when the test ends, and the
// subscriber of the handler named after the group, holding inFlight
// messages. It skips the suite's tests st skips.
func suiteConstructor(st Suite, open Opener, inFlight int) tests.ConsumerGroupPubSubConstructor {
	return func(t *testing.T, handler string) (message.Publisher, message.Subscriber) {
		t.Helper()
		if reason, ok := st.Skip[suiteTestName(t)]; ok {
			t.Skip(reason)
		}
		tr := OpenWith(t, open)
		sub, err := tr.Subscriber(handler, inFlight)
		if err != nil {
			t.Fatal(err)
		}
		pub := tr.Publisher()
		if st.Publisher != nil {
			pub = st.Publisher(pub)
		}
		return pub, sub
	}
}

// RunPubSubSuiteClosing runs Watermill's TestConcurrentClose and
// TestContinueAfterSubscribeClose, which the suite runs only for a
// pub/sub that does not declare exactly-once delivery, on st, a
// persistent transport that declares it (SQL), reading as for one that
// does not (duplicates dropped): they check what every transport owes,
// that closing subscribers, also several at once, loses no message.
func RunPubSubSuiteClosing(t *testing.T, st Suite) {
	if f := st.Features(1); !f.ExactlyOnceDelivery || !f.Persistent {
		t.Fatal("RunPubSubSuiteClosing is for a persistent transport with exactly-once delivery: the suite runs these tests on the others")
	}
	for _, inFlight := range []int{1, DefaultInFlight} {
		t.Run(fmt.Sprintf("in-flight-%d", inFlight), func(t *testing.T) {
			t.Parallel()
			features := suiteFeatures(st, inFlight)
			features.ExactlyOnceDelivery = false
			constructor := suiteConstructor(st, st.Open(t), inFlight)
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
