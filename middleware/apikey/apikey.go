// Package apikey authenticates HTTP requests by bearer API key and carries
// the caller's identity in the request's context ([ClientFromContext]),
// where the HTTP face of the receiver (package idempotencykey) keeps each
// client's Idempotency-Key records apart. Another authentication scheme
// (mTLS, JWT) sets the identity with [ContextWithClient] instead.
package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/onceflow/onceflow/problem"
)

// Keys resolves bearer API keys to client identities. It keeps only the
// SHA-256 of each key, and compares a presented key with every known one in
// constant time. It is immutable and safe for concurrent use.
type Keys struct {
	keys []apiKey
}

type apiKey struct {
	digest [sha256.Size]byte
	client string
}

// NewKeys returns the resolver of keys, a map from API key to client
// identity. A client may have several keys (to rotate them). Keys and
// clients must not be empty; clients must be valid UTF-8 without control
// characters. Errors name the client, never a key.
func NewKeys(keys map[string]string) (*Keys, error) {
	k := &Keys{keys: make([]apiKey, 0, len(keys))}
	var errs []error
	for key, client := range keys {
		switch {
		case key == "":
			errs = append(errs, fmt.Errorf("client %q has an empty api key", client))
		case client == "" || !utf8.ValidString(client) || strings.ContainsFunc(client, unicode.IsControl):
			errs = append(errs, fmt.Errorf("client %q: a client must be non-empty printable text", client))
		default:
			k.keys = append(k.keys, apiKey{digest: sha256.Sum256([]byte(key)), client: client})
		}
	}
	if len(k.keys) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no api keys"))
	}
	return k, errors.Join(errs...)
}

// Clients returns the distinct client identities, sorted.
func (k *Keys) Clients() []string {
	clients := make([]string, 0, len(k.keys))
	for _, e := range k.keys {
		clients = append(clients, e.client)
	}
	slices.Sort(clients)
	return slices.Compact(clients)
}

// Client returns the client identity of key. The time it takes does not
// depend on which key, if any, matches, nor on how much of one does.
func (k *Keys) Client(key string) (string, bool) {
	digest := sha256.Sum256([]byte(key))
	found := -1
	for i, e := range k.keys {
		eq := subtle.ConstantTimeCompare(digest[:], e.digest[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return "", false
	}
	return k.keys[found].client, true
}

// Errors of Authenticate, answered with 401 (see [problem.Unauthorized]).
var (
	errNoAPIKey      = problem.New(problem.Unauthorized, "an API key is required: send Authorization: Bearer <key>")
	errInvalidAPIKey = problem.New(problem.Unauthorized, "the API key is not valid")
)

// Authenticate returns middleware that admits a request only with a known
// key in "Authorization: Bearer <key>", and puts its client identity in the
// request's context (see [ClientFromContext]), where the HTTP face
// (package idempotencykey) scopes Idempotency-Key records by it. Any other request gets 401 with
// WWW-Authenticate: Bearer, written by write (nil: [problem.Write]).
// Register it outside the HTTP face.
func Authenticate(keys *Keys, write problem.Writer) func(http.Handler) http.Handler {
	if write == nil {
		write = problem.Write
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := bearerToken(r.Header)
			if !ok {
				w.Header().Set("WWW-Authenticate", "Bearer")
				write(w, errNoAPIKey)
				return
			}
			client, ok := keys.Client(token)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				write(w, errInvalidAPIKey)
				return
			}
			next.ServeHTTP(w, r.WithContext(ContextWithClient(r.Context(), client)))
		})
	}
}

// bearerToken returns the token of the one Authorization header, if it uses
// the Bearer scheme (case-insensitive, RFC 6750).
func bearerToken(h http.Header) (string, bool) {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

type clientKey struct{}

// ContextWithClient returns ctx carrying client as the caller's identity.
// [Authenticate] sets it; another authentication scheme (mTLS, JWT) sets
// it instead, outside the HTTP face, which refuses a request without one.
// An empty client is no identity.
func ContextWithClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// ClientFromContext returns the caller's identity, if authentication set
// one. Without it (or with an empty one), the HTTP face (package
// idempotencykey) refuses the request with 403, unless its WithAnonymous
// makes every such caller one anonymous client.
func ClientFromContext(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(clientKey{}).(string)
	return c, ok
}
