package traffic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/handlers"
)

// serviceClient talks to a running service's payments API at base, with
// "Authorization: Bearer apiKey" when apiKey is set. It is safe for
// concurrent use.
type serviceClient struct {
	base   string
	apiKey string
	client *http.Client

	mu    sync.Mutex
	codes map[int]int // createPayment's answers by status
}

// newServiceClient returns a client for the service at base that keeps up
// to conns idle connections to it (0: net/http's default).
func newServiceClient(base, apiKey string, conns int) *serviceClient {
	client := &http.Client{Timeout: 10 * time.Second}
	if conns > 0 {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = conns, conns
		client.Transport = t
	}
	return &serviceClient{base: base, apiKey: apiKey, client: client, codes: map[int]int{}}
}

// createPayment sends p as one POST /v1/payments with a fresh
// Idempotency-Key, so every call is a new request that publishes p again.
// An answer other than 2xx is an error.
func (c *serviceClient) createPayment(ctx context.Context, p handlers.Payment) error {
	body, _ := json.Marshal(map[string]any{
		"payment_id": p.ID, "customer_id": p.CustomerID,
		"amount_cents": p.AmountCents, "currency": p.Currency,
	})
	code, err := c.post(ctx, c.base+"/v1/payments", body)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.codes[code]++
	c.mu.Unlock()
	return nil
}

// statuses counts createPayment's successful answers by status.
func (c *serviceClient) statuses() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.codes)
}

func (c *serviceClient) post(ctx context.Context, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	c.authorize(req)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("status %s", resp.Status)
	}
	return resp.StatusCode, nil
}

func (c *serviceClient) authorize(req *http.Request) {
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
}
