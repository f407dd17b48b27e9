package redispoison

import (
	"encoding/binary"
	"errors"
	"slices"
)

// Metadata is stored in one hash field as its entries in key order, each
// key and value as a uvarint length followed by its bytes. Unlike JSON,
// which replaces bytes that are not UTF-8, this keeps every byte; a nil
// map and an empty one are both stored as "" and read back as an empty
// map.

// encodeMetadata encodes md as decodeMetadata reads it.
func encodeMetadata(md map[string]string) string {
	keys := make([]string, 0, len(md))
	n := 0
	for k, v := range md {
		keys = append(keys, k)
		n += len(k) + len(v) + 2*binary.MaxVarintLen32
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		v := md[k]
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return string(b)
}

var errBadMetadata = errors.New("malformed metadata field")

// decodeMetadata decodes what encodeMetadata encoded.
func decodeMetadata(s string) (map[string]string, error) {
	md := map[string]string{}
	for s != "" {
		k, rest, ok := cut(s)
		if !ok {
			return nil, errBadMetadata
		}
		v, rest, ok := cut(rest)
		if !ok {
			return nil, errBadMetadata
		}
		md[k] = v
		s = rest
	}
	return md, nil
}

// cut reads one length-prefixed string off the front of s.
func cut(s string) (string, string, bool) {
	// binary.Uvarint wants bytes; read the prefix from at most its longest
	// form, without copying the rest.
	head := s[:min(len(s), binary.MaxVarintLen64)]
	n, w := binary.Uvarint([]byte(head))
	if w <= 0 || n > uint64(len(s)-w) {
		return "", "", false
	}
	s = s[w:]
	return s[:n], s[n:], true
}
