package idempotencykey

import (
	"context"
	"net/http"

	"github.com/onceflow/onceflow/middleware/receiver"
)

type effectNameKey struct{}

// WithEffectName names the effect of the requests made with ctx through
// [EffectKeys]: a handler that sends two requests to one endpoint (two
// charges, say) names each, so they get distinct keys.
func WithEffectName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, effectNameKey{}, name)
}

// EffectKeys returns next adding "Idempotency-Key: <effect key>" (see
// [receiver.EffectKey]) to every request with an unsafe method (POST, PUT,
// PATCH, DELETE) whose context belongs to a receiver's run and that has no
// Idempotency-Key of its own: the outbound side of the header, so that a
// provider guarded by Idempotency-Key (onceflow's [Middleware], say) does
// a handler's effect once however often the handler runs. The effect is
// named by [WithEffectName], else by the method, host and path, so one
// call to each endpoint needs no name. Other requests, and those made with
// [receiver.WithoutEffectKeys], pass unchanged. A nil next is
// [http.DefaultTransport].
func EffectKeys(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return effectKeys{next}
}

type effectKeys struct{ next http.RoundTripper }

func (t effectKeys) RoundTrip(req *http.Request) (*http.Response, error) {
	if !unsafeMethod(req.Method) || req.Header.Get(Header) != "" {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	name, ok := ctx.Value(effectNameKey{}).(string)
	if !ok {
		name = req.Method + " " + req.URL.Host + req.URL.Path
	}
	key, ok := receiver.EffectKey(ctx, name)
	if !ok {
		return t.next.RoundTrip(req)
	}
	// A RoundTripper must not change the request it is given.
	req = req.Clone(ctx)
	req.Header.Set(Header, key)
	return t.next.RoundTrip(req)
}

func unsafeMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
