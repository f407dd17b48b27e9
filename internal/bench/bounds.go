package bench

import (
	"context"
	"fmt"
	"time"
)

// StorePairsContender is the contender of the router comparison that times
// the memory store alone, in the same rounds: Claim+Complete pairs per
// second, one caller, over as many fresh keys as a round has messages; the
// least any receiver on it can add to a message.
const StorePairsContender = "store-pairs"

// FingerprintsContender is the contender of the router comparison that
// times the receiver's default fingerprint alone, in the same rounds: the
// SHA-256 of as many payloads of the round's size as a round has messages,
// per second. A key reused for another payload is told apart by it, so
// every message pays it.
const FingerprintsContender = "fingerprints"

// StoreClaimsContender is the contender of the store-call comparisons that
// claims fresh keys and completes none (see [StoreClaims]): the store's
// claims/s, which the moonshots hold against their references.
const StoreClaimsContender = "store-claims"

// ceilingNote returns the note that states, when the moonshot target is
// missed, how far batching could take the claim: ceiling is the contender
// that runs the store's own claim with its server's reference client, every
// claim in flight in one round trip (see [RedisBatchedContender]). When
// even that stays under the goal, no batching of the store can reach it on
// this machine; otherwise the gap is the store's client and how full its
// batches run.
func ceilingNote(target, ceiling string) Note {
	return func(_ context.Context, rep *Report) ([]string, error) {
		v, missed := rep.Missed(target)
		if !missed {
			return nil, nil
		}
		res, _ := rep.Result(v.Comparison)
		best, ok1 := res.Median(ceiling)
		ref, ok2 := res.Median(v.Over)
		claims, ok3 := res.Median(v.Of)
		if !ok1 || !ok2 || !ok3 || ref <= 0 {
			return nil, nil
		}
		verdict := "out of reach on this machine: batching cannot take the claim past what its server does with it"
		if best/ref >= v.Goal {
			verdict = "within reach of the server; the gap is the store's client and how full its batches run"
		}
		return []string{fmt.Sprintf("Bound: %s: %s runs the store's own claim with every claim in flight in one round trip "+
			"and reaches %.0f claims/s, %.3f x %s (%.0f/s), in the same rounds; the store reaches %.0f claims/s, %.3f x (goal %g): %s.",
			v.Name, ceiling, best, best/ref, v.Over, ref, claims, v.Value, v.Goal, verdict)}, nil
	}
}

// memoryBound states, when memory-vs-none is missed, where a message's time
// goes, and the most that ratio can be given what every message must cost
// the receiver, measured in the same rounds: a message through the
// receiver costs at least the router's time without middleware plus one
// Claim and one Complete on the memory store plus its fingerprint, so the
// ratio is at most 1 / (1 + none x (pair + fingerprint)), whatever the
// receiver's own code costs.
func memoryBound(_ context.Context, rep *Report) ([]string, error) {
	v, missed := rep.Missed("memory-vs-none")
	if !missed {
		return nil, nil
	}
	router, _ := rep.Result(RouterMemory)
	none, ok1 := router.Median("none")
	pairs, ok2 := router.Median(StorePairsContender)
	fps, ok3 := router.Median(FingerprintsContender)
	if !ok1 || !ok2 || !ok3 || none <= 0 || pairs <= 0 || fps <= 0 {
		return nil, nil
	}
	perMessage := time.Duration(float64(time.Second) / none)
	pair := time.Duration(float64(time.Second) / pairs)
	fp := time.Duration(float64(time.Second) / fps)
	ceiling := 1 / (1 + none*(pair+fp).Seconds())
	verdict := "out of reach on this router: the store's two calls and the fingerprint alone cost more than the goal leaves"
	if ceiling >= v.Goal {
		verdict = "within reach of the store's cost and the fingerprint's; the rest is the receiver's own"
	}
	var lines []string
	if d, ok := router.Median("deduplicator"); ok && d > 0 {
		lines = append(lines, dedupSplit(none, d, v.Value*none, pair))
	}
	return append(lines, fmt.Sprintf("Bound: memory-vs-none: the GoChannel router takes %s per message without middleware, "+
		"so the goal %g leaves %s for the receiver; the memory store's Claim+Complete alone takes %s (one caller, fresh keys, in the same rounds) "+
		"and the payload's SHA-256 fingerprint %s, so the ratio is at most %.3f (measured %.3f): %s.",
		perMessage.Round(time.Nanosecond*10), v.Goal, time.Duration(float64(perMessage)*(1/v.Goal-1)).Round(time.Nanosecond*10),
		pair.Round(time.Nanosecond*10), fp.Round(time.Nanosecond*10), ceiling, v.Value, verdict)), nil
}

// dedupSplit says where a message's time goes with the receiver and with
// Watermill's Deduplicator: what each adds to the router's time without
// middleware, and how much of the receiver's share is its store's two
// calls (the Deduplicator keeps a key in a map and no result, and marks the
// key before the handler runs, so a failed message is lost).
func dedupSplit(none, dedup, memory float64, pair time.Duration) string {
	per := func(rate float64) time.Duration { return time.Duration(float64(time.Second) / rate) }
	receiver, deduplicator := per(memory)-per(none), per(dedup)-per(none)
	round := func(d time.Duration) time.Duration { return d.Round(10 * time.Nanosecond) }
	return fmt.Sprintf("Cost per message over the router without middleware: the receiver adds %s, of which its memory store's "+
		"Claim+Complete (fenced lease, fingerprint and result kept for replay) is %s and its own code %s; Watermill's Deduplicator "+
		"adds %s for one map insert and no stored result.",
		round(receiver), round(pair), round(receiver-pair), round(deduplicator))
}
