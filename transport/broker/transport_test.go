package broker

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
)

// A subscriber holds at least one message; any transport refuses less.
func TestSubscriberRefusesNoneInFlight(t *testing.T) {
	tr := New(Parts{Subscriber: func(string, int) (message.Subscriber, error) {
		t.Fatal("the broker was asked for a subscriber with 0 messages in flight")
		return nil, nil
	}}, "")
	if _, err := tr.Subscriber("h", 0); err == nil {
		t.Error("a subscriber with 0 messages in flight was created")
	}
}
