package cache_test

import (
	"context"
	"testing"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/cache"
)

// The two benchmarks claim one completed key in Redis through the cache:
// BenchmarkClaimHit is answered by the cache, BenchmarkClaimMissRedis
// (a result larger than MaxResultBytes, so never cached) by a round trip.

func BenchmarkClaimHit(b *testing.B) {
	benchmarkDuplicateClaim(b, cache.Config{})
}

func BenchmarkClaimMissRedis(b *testing.B) {
	benchmarkDuplicateClaim(b, cache.Config{MaxResultBytes: 1})
}

func benchmarkDuplicateClaim(b *testing.B, cfg cache.Config) {
	s := cache.New(newRedis(b), cfg)
	ctx := context.Background()
	result := make([]byte, 64)
	c, err := s.Claim(ctx, "k", fp, lease)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Complete(ctx, "k", c.Token, result, ttl); err != nil {
		b.Fatal(err)
	}
	before := s.Stats()
	b.ReportAllocs()
	for b.Loop() {
		c, err := s.Claim(ctx, "k", fp, lease)
		if err != nil || c.Status != stores.Completed {
			b.Fatalf("Claim = %v, %v; want completed", c.Status, err)
		}
	}
	st := s.Stats()
	hits, misses := st.Hits-before.Hits, st.Misses-before.Misses
	b.ReportMetric(float64(hits)/float64(hits+misses), "hit-ratio")
}
