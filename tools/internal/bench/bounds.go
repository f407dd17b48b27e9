package bench

import (
	"context"
	"fmt"
	"time"
)

// StoreClaimsContender is the contender of the store-call comparisons that
// claims fresh keys and completes none (see [StoreClaims]): the store's
// claims/s, which the batched-claim targets hold against their references.
const StoreClaimsContender = "store-claims"

// ceilingNote returns the note that states, when the batched-claim target is
// missed, how far batching could take the claim: ceiling is the contender
// that runs the store's own claim with its server's reference client, every
// claim in flight in one round trip of keys claims (see
// [RedisBatchedContender]), and fill holds how many the store's claim
// batches carried in the same rounds, against the most its keys callers
// can put in each of the workers batches it keeps in flight. When even the
// ceiling stays under the goal, no batching of the store can reach it on
// this machine; otherwise the gap is the store's client and how full its
// batches run.
func ceilingNote(target, ceiling string, fill *BatchFill, keys, workers int) Note {
	return func(_ context.Context, rep *Report) ([]string, error) {
		v, missed := rep.Missed(target)
		if !missed {
			return nil, nil
		}
		res, _ := rep.Result(v.Comparison)
		best, ok1 := res.Median(ceiling)
		ref, ok2 := res.Median(v.Over)
		claims, ok3 := res.Median(v.Of)
		reach, ok4 := res.Paired(ceiling, v.Over, Ratio)
		if !ok1 || !ok2 || !ok3 || !ok4 || ref <= 0 {
			return nil, nil
		}
		verdict := "out of reach on this machine: batching cannot take the claim past what its server does with it"
		if reach >= v.Goal {
			verdict = "within reach of the server; the gap is the store's client and how full its batches run"
		}
		carried := ""
		if mean, ok := fill.Median(); ok {
			carried = fmt.Sprintf(", its claim batches carrying %.1f claims on average, of the %d each of the %d it keeps in flight "+
				"can carry when all %d callers wait (the ceiling sends all %d in one)", mean, (keys+workers-1)/workers, workers, keys, keys)
		}
		return []string{fmt.Sprintf("Bound: %s: %s runs the store's own claim with every claim in flight in one round trip "+
			"and reaches %.0f claims/s, %.3f x %s (%.0f/s), in the same rounds; the store reaches %.0f claims/s, %.3f x (goal %g)%s: %s.",
			v.Name, ceiling, best, reach, v.Over, ref, claims, v.Value, v.Goal, carried, verdict)}, nil
	}
}

// memoryBound states, when memory-vs-none is missed, where a message's time
// goes, and the most that ratio can be given what every message must cost
// the receiver, measured in the same router and rounds: the floor
// contender (see [FloorMiddleware]) fingerprints the payload and makes the
// memory store's Claim and Complete, and nothing else, so the receiver's
// ratio is at most the floor's, whatever its own code costs. Timed inside
// the router, those calls cost what they cost there, with its goroutine
// per message and its caches, not what a loop of them alone costs.
func memoryBound(_ context.Context, rep *Report) ([]string, error) {
	v, missed := rep.Missed("memory-vs-none")
	if !missed {
		return nil, nil
	}
	router, _ := rep.Result(RouterMemory)
	none, ok1 := router.Median("none")
	floor, ok2 := router.Median(FloorContender)
	ceiling, ok3 := router.Paired(FloorContender, "none", Ratio)
	if !ok1 || !ok2 || !ok3 || none <= 0 || floor <= 0 {
		return nil, nil
	}
	verdict := "out of reach on this router: the store's two calls and the fingerprint alone cost more than the goal leaves"
	if ceiling >= v.Goal {
		verdict = "within reach of the store's cost and the fingerprint's; the rest is the receiver's own"
	}
	bare := perMessage(none)
	var lines []string
	d, ok1 := router.Median("deduplicator")
	m, ok2 := router.Median("memory")
	if ok1 && ok2 && d > 0 && m > 0 {
		lines = append(lines, dedupSplit(none, d, m, floor))
	}
	return append(lines, fmt.Sprintf("Bound: memory-vs-none: the GoChannel router takes %s per message without middleware, "+
		"so the goal %g leaves %s for the receiver; a middleware that only fingerprints the payload (SHA-256) and makes the memory store's "+
		"Claim and Complete (the %s contender, in the same router and rounds) adds %s, so the ratio is at most %.3f (measured %.3f): %s.",
		round10(bare), v.Goal, round10(time.Duration(float64(bare)*(1/v.Goal-1))),
		FloorContender, round10(perMessage(floor)-bare), ceiling, v.Value, verdict)), nil
}

// dedupSplit says where a message's time goes with the receiver and with
// Watermill's Deduplicator: what each adds to the router's time without
// middleware, and how much of the receiver's share the floor contender's
// fingerprint and store calls take (the Deduplicator keeps a key in a map
// and no result, and marks the key before the handler runs, so a failed
// message is lost). All four are msg/s of the same router.
func dedupSplit(none, dedup, memory, floor float64) string {
	receiver, floorCost := perMessage(memory)-perMessage(none), perMessage(floor)-perMessage(none)
	return fmt.Sprintf("Cost per message over the router without middleware: the receiver adds %s, of which its fingerprint and its memory store's "+
		"Claim+Complete (fenced lease, fingerprint and result kept for replay) are %s and its own code %s; Watermill's Deduplicator "+
		"adds %s for one map insert and no stored result.",
		round10(receiver), round10(floorCost), round10(receiver-floorCost), round10(perMessage(dedup)-perMessage(none)))
}

// perMessage is the time one message takes at rate messages per second.
func perMessage(rate float64) time.Duration { return time.Duration(float64(time.Second) / rate) }

// round10 rounds d to 10ns, the precision the notes print.
func round10(d time.Duration) time.Duration { return d.Round(10 * time.Nanosecond) }
