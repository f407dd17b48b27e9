package testdomain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/middleware/consume"
)

// A malformed event's error matches ErrMalformed, which the domain's
// Permanent reports, and names what is wrong: the reason a poisoned
// message carries.
func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	permanent := testdomain.Domain().Permanent
	for payload, want := range map[string]string{
		`not json`:                                   "invalid character",
		`{"id":"a-1","amount":`:                      "unexpected end of JSON input",
		`{"id":"a-1","amount":"5"}`:                  "amount: has the wrong JSON type",
		`{"id":7,"amount":5}`:                        "id: has the wrong JSON type",
		`{"amount":5}`:                               "id: must be 1 to 128",
		`{"id":"a/1","amount":5}`:                    "id: must be 1 to 128",
		`{"id":"a-1","amount":0}`:                    "amount: must be a positive integer",
		`{"id":"a-1","amount":1.5}`:                  "amount: has the wrong JSON type",
		`{"client":"a\u0000","id":"a-1","amount":5}`: "client: must be printable",
		`{"id":"a-1","amount":5,"charge":" "}`:       "charge: must be a provider's charge id",
		`{"id":"","amount":-1}`:                      "id: must be 1 to 128 of A-Z, a-z, 0-9, '.', '_', ':' and '-'; amount: must be a positive integer",
	} {
		_, err := testdomain.Decode([]byte(payload))
		if !errors.Is(err, testdomain.ErrMalformed) || !strings.Contains(err.Error(), want) || !permanent(err) {
			t.Errorf("Decode(%s) = %v, want a permanent ErrMalformed naming %q", payload, err, want)
		}
	}
	if permanent(errors.New("the provider answered 503")) {
		t.Error("a provider's 503 is permanent")
	}
}

// An event's message is what a producer of the contract sends: the JSON
// payload, the event's key as metadata idempotency_key, the client before
// the id.
func TestEventMessage(t *testing.T) {
	t.Parallel()
	for _, e := range []testdomain.Event{
		{ID: "a-1", Amount: 5},
		{Client: "client-a", ID: "a-1", Amount: 5, Charge: "ch_1"},
	} {
		msg := e.Message()
		got, err := testdomain.Decode(msg.Payload)
		if err != nil || got != e {
			t.Errorf("%+v: decoded %s to %+v, %v", e, msg.Payload, got, err)
		}
		if k := msg.Metadata.Get(consume.MetadataKey); k != e.Key() || !strings.HasSuffix(k, e.ID) || (e.Client == "") != (k == e.ID) {
			t.Errorf("%+v: idempotency key %q", e, k)
		}
	}
	if got, err := testdomain.Decode([]byte(`{"id":"a-1","amount":5,"added":true}`)); err != nil || got.ID != "a-1" {
		t.Errorf("a producer's extra field: %+v, %v; want it ignored", got, err)
	}
}

// FuzzDecode decodes arbitrary payloads: an error matches ErrMalformed,
// and a decoded event's own message decodes to the same event.
//
//	go test -run '^$' -fuzz '^FuzzDecode$' ./app/apptest/testdomain/
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"a-1","amount":5}`))
	f.Add([]byte(`{"client":"client-a","id":"a-1","amount":5,"charge":"ch_1"}`))
	f.Add([]byte(`{"id":"a-1","amount":"5"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := testdomain.Decode(payload)
		if err != nil {
			if !errors.Is(err, testdomain.ErrMalformed) {
				t.Fatalf("Decode(%q): %v, not ErrMalformed", payload, err)
			}
			return
		}
		if again, err := testdomain.Decode(e.Message().Payload); err != nil || again != e {
			t.Fatalf("Decode(%q) = %+v, whose message decodes to %+v, %v", payload, e, again, err)
		}
	})
}
