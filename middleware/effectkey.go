package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
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

type effectNameKey struct{}

// effectKeyVersion begins every hashed text, so that a later derivation
// never yields the same keys.
const effectKeyVersion = "onceflow-effect-v1"

// withEffectScope gives ctx, the context of a run of record key k, its
// effect keys.
func withEffectScope(ctx context.Context, k string) context.Context {
	return context.WithValue(ctx, effectScopeKey{}, k)
}

// EffectKey returns the effect key of the effect named name in the run ctx
// belongs to: the context [Receiver.Execute] gives its function, or the
// message context a handler under [Receiver.Middleware] gets. It reports
// false outside such a run. A handler that makes one call needs no name
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
// [EffectKey] reports false for it and requests made with it through
// [EffectKeys] carry no key. It is for a call whose repeats are wanted,
// one that must reach the other side every time the handler runs, and for
// measuring what the keys close.
func WithoutEffectKeys(ctx context.Context) context.Context {
	return context.WithValue(ctx, effectScopeKey{}, nil)
}

// WithEffectName names the effect of the requests made with ctx through
// [EffectKeys]: a handler that sends two requests to one endpoint (two
// charges, say) names each, so they get distinct keys.
func WithEffectName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, effectNameKey{}, name)
}

// EffectKeys returns next adding "Idempotency-Key: <effect key>" to every
// request with an unsafe method (POST, PUT, PATCH, DELETE) whose context
// belongs to a receiver's run and that has no Idempotency-Key of its own.
// The effect is named by [WithEffectName], else by the method, host and
// path, so one call to each endpoint needs no name. Other requests pass
// unchanged. A nil next is [http.DefaultTransport].
func EffectKeys(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return effectKeys{next}
}

type effectKeys struct{ next http.RoundTripper }

func (t effectKeys) RoundTrip(req *http.Request) (*http.Response, error) {
	if !unsafeMethod(req.Method) || req.Header.Get(IdempotencyKeyHeader) != "" {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	name, ok := ctx.Value(effectNameKey{}).(string)
	if !ok {
		name = req.Method + " " + req.URL.Host + req.URL.Path
	}
	key, ok := EffectKey(ctx, name)
	if !ok {
		return t.next.RoundTrip(req)
	}
	// A RoundTripper must not change the request it is given.
	req = req.Clone(ctx)
	req.Header.Set(IdempotencyKeyHeader, key)
	return t.next.RoundTrip(req)
}

func unsafeMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
