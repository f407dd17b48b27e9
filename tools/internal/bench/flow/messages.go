package flow

import (
	"fmt"
	"strconv"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/consume"
)

// minCopyLag is the fewest originals published between a message and its
// copy, whatever the messages in flight.
const minCopyLag = 10

// copyLag is how many originals are published between a message and its
// copy when consumers hold inFlight messages at once in all: eight times
// as many, so that a copy usually meets a completed record, as a
// redelivery or a re-sent message does, rather than its original still
// in flight (which the receiver refuses, and the broker redelivers later).
func copyLag(inFlight int) int { return max(minCopyLag, 8*inFlight) }

// batch returns unique messages keyed round-index (metadata
// idempotency_key) plus copies duplicates of them: each copy has its
// original's key and payload and a UUID of its own, and is published lag
// originals after its original. The copies go to the originals that have
// lag originals after them, spread evenly; in a round of no more than lag
// originals, to all of them, after the last. It returns the messages in
// publishing order and the copies each index got.
func batch(round string, unique, duplicates, lag int) ([]*message.Message, []int) {
	copies := make([]int, unique)
	span := unique - lag
	if span < 1 {
		span = unique
	}
	for d := range duplicates {
		copies[d*span/duplicates]++
	}
	out := make([]*message.Message, 0, unique+duplicates)
	emitCopies := func(i int) {
		for range copies[i] {
			out = append(out, newMessage(round, i))
		}
	}
	for i := range unique {
		out = append(out, newMessage(round, i))
		if i >= lag {
			emitCopies(i - lag)
		}
	}
	for i := max(0, unique-lag); i < unique; i++ {
		emitCopies(i)
	}
	return out, copies
}

// newMessage is message i of round: a payload that depends on i only, so
// a copy has the same fingerprint, of 77 bytes with a round of shortID's
// 12 characters.
func newMessage(round string, i int) *message.Message {
	payload := fmt.Appendf(nil, `{"id":"%s-%08d","amount":1000,"pad":"%s"}`, round, i, "0123456789abcdefghijklmn")
	msg := message.NewMessage(watermill.NewUUID(), payload)
	msg.Metadata.Set(consume.MetadataKey, round+"-"+strconv.Itoa(i))
	msg.Metadata.Set(indexMetadata, strconv.Itoa(i))
	return msg
}
