package app

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Healthcheck asks the service running at INTERNAL_ADDR, or HTTP_ADDR when
// that is unset, whether it is ready (GET /readyz) and fails unless it
// answers 200. It is the container image's
// health check, which has no shell or curl.
func Healthcheck(ctx context.Context, environ []string) error {
	cfg, err := LoadConfig(environ)
	if err != nil {
		return err
	}
	base, err := cfg.InternalURL()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("checking %s/readyz: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/readyz answered %s", base, resp.Status)
	}
	return nil
}
