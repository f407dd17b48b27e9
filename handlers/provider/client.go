package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/onceflow/onceflow/middleware/idempotencykey"
)

// ErrRefused matches the error of a charge the provider refused for good
// (400, 403, 404, 413, 415, 422: a malformed request, or an
// Idempotency-Key already used with another request): sending it again
// would be refused again. Other failures (a 5xx, 408, 409 while the
// first request of its key is in flight, 429, no answer) are worth a
// retry.
var ErrRefused = errors.New("the provider refused the charge")

// Client calls a provider, as a provider's SDK would. It is safe for
// concurrent use.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the provider at baseURL (such as
// http://127.0.0.1:8090) that sends its requests with hc; a nil hc is
// [http.DefaultClient]. Give hc the transport [idempotencykey.EffectKeys] so
// that a charge made in a receiver's run carries the run's effect key as
// its Idempotency-Key.
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), hc: hc}
}

// URL is the provider's base URL.
func (c *Client) URL() string { return c.base }

// Charge asks the provider to charge req, with the Idempotency-Key that
// the client's transport adds, if any, and returns the charge the
// provider answered with: a new one, or, for a key it has seen, the
// first one (Replayed). ctx bounds the call.
func (c *Client) Charge(ctx context.Context, req ChargeRequest) (Charge, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Charge{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/charges", bytes.NewReader(body))
	if err != nil {
		return Charge{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return Charge{}, fmt.Errorf("charging at the provider: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return Charge{}, answerError(resp)
	}
	var ch Charge
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ch); err != nil || ch.ID == "" {
		return Charge{}, fmt.Errorf("charging at the provider: unreadable charge (%v)", err)
	}
	ch.Replayed = resp.Header.Get(idempotencykey.ReplayedHeader) == "true"
	return ch, nil
}

// Count returns how many charges the provider made: of payment paymentID,
// or of every payment when it is "".
func (c *Client) Count(ctx context.Context, paymentID string) (int64, error) {
	u := c.base + "/charges/count"
	if paymentID != "" {
		u += "?payment_id=" + url.QueryEscape(paymentID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("counting charges at the provider: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, answerError(resp)
	}
	var n countResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&n); err != nil {
		return 0, fmt.Errorf("counting charges at the provider: %w", err)
	}
	return n.Charges, nil
}

// answerError is the error of a response other than the one asked for:
// its status and problem detail, matching ErrRefused when a retry cannot
// help.
func answerError(resp *http.Response) error {
	var p struct {
		Detail string `json:"detail"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&p)
	err := fmt.Errorf("the provider answered %s", resp.Status)
	if p.Detail != "" {
		err = fmt.Errorf("%w: %s", err, p.Detail)
	}
	if refused(resp.StatusCode) {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return err
}

// refused reports whether status answers a request that a retry would
// not change: a 4xx other than 408, 409 and 429.
func refused(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}
