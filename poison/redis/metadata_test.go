package redispoison

import (
	"maps"
	"testing"
)

func TestMetadataRoundTrip(t *testing.T) {
	for _, md := range []map[string]string{
		nil,
		{},
		{"": ""},
		{"a": "b", "idempotency_key": "k\xff\x00", "\x80": string(make([]byte, 300))},
	} {
		got, err := decodeMetadata(encodeMetadata(md))
		if err != nil || got == nil || !maps.Equal(got, md) {
			t.Errorf("decode(encode(%q)) = %q, %v", md, got, err)
		}
	}
	for _, bad := range []string{"\x05ab", "\x01a\x05", "\xff", "\x01a"} {
		if _, err := decodeMetadata(bad); err == nil {
			t.Errorf("decode(%q) succeeded", bad)
		}
	}
}

func FuzzMetadata(f *testing.F) {
	f.Add("k", "v", "k2", "v2")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		md := map[string]string{k1: v1, k2: v2}
		got, err := decodeMetadata(encodeMetadata(md))
		if err != nil || !maps.Equal(got, md) {
			t.Errorf("decode(encode(%q)) = %q, %v", md, got, err)
		}
		_, _ = decodeMetadata(k1 + v1) // never panics
	})
}
