package redisstream

import (
	"crypto/sha256"
	"fmt"
	"slices"

	wmredisstream "github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
)

// UnreadableEntryMetadata is set, on a message read from a Redis stream
// entry that watermill-redisstream's marshaller cannot read, to why it
// cannot.
const UnreadableEntryMetadata = "redisstream_unreadable"

// streamUnmarshaller reads entries as watermill-redisstream's default
// marshaller writes them and, unlike it, never fails: an entry that could
// not be read would stay pending for good, claimed and failed again by
// every consumer. An entry without the fields that marshaller wants is
// delivered instead, with what it has: the payload field (or none), no
// metadata but [UnreadableEntryMetadata], and the UUID field or else a
// UUID derived from the entry's fields, the same on every redelivery, so
// the idempotent receiver recognises those.
type streamUnmarshaller struct{}

var _ wmredisstream.Unmarshaller = streamUnmarshaller{}

func (streamUnmarshaller) Unmarshal(values map[string]any) (*message.Message, error) {
	msg, err := unmarshalEntry(values)
	if err == nil {
		return msg, nil
	}
	id, _ := values[wmredisstream.UUIDHeaderKey].(string)
	if id == "" {
		id = entryUUID(values)
	}
	payload, _ := values["payload"].(string)
	msg = message.NewMessage(id, []byte(payload))
	msg.Metadata.Set(UnreadableEntryMetadata, err.Error())
	return msg, nil
}

// unmarshalEntry is the default marshaller's Unmarshal, with its panics
// (a field that is not a string) turned into errors.
func unmarshalEntry(values map[string]any) (msg *message.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, fmt.Errorf("unmarshalling the entry: %v", r)
		}
	}()
	return wmredisstream.DefaultMarshallerUnmarshaller{}.Unmarshal(values)
}

// entryUUID derives a UUID from an entry's fields and values.
func entryUUID(values map[string]any) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q=%q;", k, fmt.Sprint(values[k]))
	}
	return uuid.NewSHA1(uuid.Nil, h.Sum(nil)).String()
}
