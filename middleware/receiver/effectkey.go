package receiver

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// An effect key is what the receiver hands on to the systems a handler
// changes, so that an effect outside the record store happens once even
// when the handler runs twice: in lease mode a handler that fails after
// its effect is retried, and one killed between its effect and its record
// is run again once its lease ends. A payment provider, a mail API or a
// table of your own that takes the key does the effect the first time and
// answers the repeats from what it did.
//
// An effect key is the same for every delivery, retry, takeover and
// fail-open run of one idempotency key in one scope (a handler, or the HTTP
// face with its client), and differs between scopes and between effect
// names. It is the hex SHA-256 of the record key and the name, so it tells
// nothing of either: 64 characters, within every provider's limit.
//
// It closes the window only where the other side keeps its promise: a
// provider that ignores the key, or forgets it before the last retry,
// repeats the effect.

type effectScopeKey struct{}

// effectKeyVersion begins every hashed text, so that a later derivation
// never yields the same keys.
const effectKeyVersion = "onceflow-effect-v1"

// withEffectScope gives ctx, the context of a run of record key k, its
// effect keys.
func withEffectScope(ctx context.Context, k string) context.Context {
	return context.WithValue(ctx, effectScopeKey{}, k)
}

// EffectKey returns the effect key of the effect named name in the run ctx
// belongs to: the context [Receiver.Execute] gives its function, which a
// face hands its handler (a Watermill handler's message context, an HTTP
// handler's request context). It reports false outside such a run. A handler that makes one call needs no name
// (""); one that makes several gives each its own.
func EffectKey(ctx context.Context, name string) (string, bool) {
	k, ok := ctx.Value(effectScopeKey{}).(string)
	if !ok {
		return "", false
	}
	h := sha256.New()
	for _, part := range []string{effectKeyVersion, k, name} {
		writePart(h, part)
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// WithoutEffectKeys returns ctx with the run's effect keys taken away:
// [EffectKey] reports false for it, and so requests made with it carry no
// key (the HTTP face's outbound transport adds none). It is for a call whose repeats are wanted,
// one that must reach the other side every time the handler runs, and for
// measuring what the keys close.
func WithoutEffectKeys(ctx context.Context) context.Context {
	return context.WithValue(ctx, effectScopeKey{}, nil)
}

// writePart writes part to h after its length, so that no two sequences of
// parts write the same text.
func writePart(h hash.Hash, part string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(part)))
	h.Write(n[:])
	h.Write([]byte(part))
}
