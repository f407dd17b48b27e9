package flow

import (
	"fmt"
	"strconv"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware"
)

// copyLag is how many originals are published between a message and its
// copy, so that a copy usually meets a completed record, as a redelivery
// or a re-sent message does.
const copyLag = 10

// batch returns unique messages keyed round-index (metadata
// idempotency_key) plus copies duplicates of them: each copy has its
// original's key and payload and a UUID of its own. Copies go to originals
// spread evenly over the batch, each placed copyLag originals after it.
// It returns the messages in publishing order and the copies each index
// got.
func batch(round string, unique, duplicates int) ([]*message.Message, []int) {
	copies := make([]int, unique)
	for d := range duplicates {
		copies[d*unique/duplicates]++
	}
	out := make([]*message.Message, 0, unique+duplicates)
	emitCopies := func(i int) {
		for range copies[i] {
			out = append(out, newMessage(round, i))
		}
	}
	for i := range unique {
		out = append(out, newMessage(round, i))
		if i >= copyLag {
			emitCopies(i - copyLag)
		}
	}
	for i := max(0, unique-copyLag); i < unique; i++ {
		emitCopies(i)
	}
	return out, copies
}

// newMessage is message i of round: a 64-byte payload that depends on i
// only, so a copy has the same fingerprint.
func newMessage(round string, i int) *message.Message {
	payload := fmt.Appendf(nil, `{"payment_id":"%s-%08d","amount_cents":1000,"pad":"%s"}`, round, i, "0123456789")
	msg := message.NewMessage(watermill.NewUUID(), payload)
	msg.Metadata.Set(middleware.MetadataKey, round+"-"+strconv.Itoa(i))
	msg.Metadata.Set(indexMetadata, strconv.Itoa(i))
	return msg
}
