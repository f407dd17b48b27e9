package payments

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
)

// openCharger returns the client of the payment provider that charge_payment
// charges, and what releases them once the handlers have stopped. The
// client sends each charge with the effect key of the run that makes it.
//
// The provider is the domain's setting PAYMENT_PROVIDER_URL, its base URL
// (http://provider:8080 in the compose stack). Unset, the domain starts
// one in process, on a loopback port with its records in memory, so that
// `make run` needs nothing else; each replica then charges a provider of
// its own.
func openCharger(ctx context.Context, deps domain.Deps) (*provider.Client, func() error, error) {
	logger := deps.Logger
	if logger == nil {
		logger = slog.Default()
	}
	transport := &http.Transport{
		DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		// One connection per charge in flight, kept for the next.
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	hc := &http.Client{Transport: idempotencykey.EffectKeys(transport)}

	if raw := deps.Getenv("PAYMENT_PROVIDER_URL"); raw != "" {
		const want = "want the provider's base URL, such as http://provider:8080"
		u, err := url.Parse(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("PAYMENT_PROVIDER_URL is not a URL: %s", want) // nor shown: it may hold a password
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, fmt.Errorf("PAYMENT_PROVIDER_URL=%q: %s", u.Redacted(), want)
		}
		logger.InfoContext(ctx, "charging the payment provider", "url", u.Redacted())
		return provider.NewClient(raw, hc), func() error { transport.CloseIdleConnections(); return nil }, nil
	}
	s, err := provider.Listen(ctx, "127.0.0.1:0", provider.Config{Logger: logger.With("component", "payment_provider")})
	if err != nil {
		return nil, nil, fmt.Errorf("starting the in-process payment provider: %w", err)
	}
	logger.InfoContext(ctx, "charging an in-process payment provider, its records in memory: set PAYMENT_PROVIDER_URL to share one between replicas",
		"url", s.URL())
	return provider.NewClient(s.URL(), hc), func() error {
		transport.CloseIdleConnections()
		return s.Close()
	}, nil
}
