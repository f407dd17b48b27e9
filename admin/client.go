package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/problem"
)

// Client calls a running service's admin API, as `onceflow keys` does.
type Client struct {
	// BaseURL is the service, such as http://127.0.0.1:8080.
	BaseURL string
	// APIKey is the operator's own key of the service's ADMIN_API_KEYS:
	// the service logs every action as that operator's.
	APIKey string
	// HTTP sends the requests; nil: http.DefaultClient.
	HTTP *http.Client
}

// Get reads the record t names.
func (c *Client) Get(ctx context.Context, t Target) (Record, error) {
	return c.do(ctx, http.MethodGet, "", t, nil)
}

// Release frees the in-progress record t names; see [Service.Release].
func (c *Client) Release(ctx context.Context, t Target, force bool) (Record, error) {
	var extra url.Values
	if force {
		extra = url.Values{"force": {"true"}}
	}
	return c.do(ctx, http.MethodPost, "/release", t, extra)
}

// Evict removes the completed record t names; see [Service.Evict].
func (c *Client) Evict(ctx context.Context, t Target) (Record, error) {
	return c.do(ctx, http.MethodPost, "/evict", t, nil)
}

// do sends one request of the key admin.
func (c *Client) do(ctx context.Context, method, action string, t Target, q url.Values) (Record, error) {
	if q == nil {
		q = url.Values{}
	}
	for name, v := range map[string]string{"key": t.Key, "route": t.Route, "client": t.Client} {
		if v != "" {
			q.Set(name, v)
		}
	}
	var r Record
	err := c.call(ctx, method, "/admin/keys/"+url.PathEscape(t.Handler)+action, q, &r)
	return r, err
}

// call sends one request and decodes its answer into out. An answer other
// than 200 is an error carrying the problem's status and detail.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, out any) error {
	u := strings.TrimRight(c.BaseURL, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var d problem.Details
		if json.Unmarshal(body, &d) == nil && d.Detail != "" {
			return fmt.Errorf("%s: %s", resp.Status, d.Detail)
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%s: the service serves no admin API here: set ADMIN_API_KEYS on it", resp.Status)
		}
		return fmt.Errorf("%s", resp.Status)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return nil
}

// maxAnswer is the most of an answer the client reads: a page of
// poison.MaxLimit messages of a few KiB each fits.
const maxAnswer = 64 << 20

// Poisoned lists a page of the parked messages f selects.
func (c *Client) Poisoned(ctx context.Context, f poison.Filter) (Page, error) {
	var p Page
	return p, c.call(ctx, http.MethodGet, "/admin/poison", FilterQuery(f), &p)
}

// PoisonSummary counts the parked messages by handler and class.
func (c *Client) PoisonSummary(ctx context.Context) (Summary, error) {
	var s Summary
	return s, c.call(ctx, http.MethodGet, "/admin/poison/summary", nil, &s)
}

// PoisonedMessage reads the parked message id.
func (c *Client) PoisonedMessage(ctx context.Context, id string) (poison.Message, error) {
	var m poison.Message
	return m, c.call(ctx, http.MethodGet, "/admin/poison/"+url.PathEscape(id), nil, &m)
}

// Redrive sends the parked message id back to its topic; see
// [poison.Console.Redrive].
func (c *Client) Redrive(ctx context.Context, id string, force bool) (poison.Message, error) {
	var m poison.Message
	return m, c.call(ctx, http.MethodPost, "/admin/poison/"+url.PathEscape(id)+"/redrive", flags(force, false, nil), &m)
}

// Discard drops the parked message id; see [poison.Console.Discard].
func (c *Client) Discard(ctx context.Context, id string) (poison.Message, error) {
	var m poison.Message
	return m, c.call(ctx, http.MethodPost, "/admin/poison/"+url.PathEscape(id)+"/discard", nil, &m)
}

// RedriveAll redrives the parked messages f selects; see
// [poison.Console.RedriveAll].
func (c *Client) RedriveAll(ctx context.Context, f poison.Filter, force, dryRun bool) (poison.Batch, error) {
	var b poison.Batch
	return b, c.call(ctx, http.MethodPost, "/admin/poison/redrive", flags(force, dryRun, FilterQuery(f)), &b)
}

// DiscardAll discards the parked messages f selects.
func (c *Client) DiscardAll(ctx context.Context, f poison.Filter, dryRun bool) (poison.Batch, error) {
	var b poison.Batch
	return b, c.call(ctx, http.MethodPost, "/admin/poison/discard", flags(false, dryRun, FilterQuery(f)), &b)
}

func flags(force, dryRun bool, q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if force {
		q.Set("force", "true")
	}
	if dryRun {
		q.Set("dry_run", "true")
	}
	return q
}

// FilterQuery is f as the query [ParseFilter] reads.
func FilterQuery(f poison.Filter) url.Values {
	q := url.Values{}
	for name, v := range map[string]string{"handler": f.Handler, "topic": f.Topic, "class": string(f.Class),
		"state": string(f.State), "after": f.After} {
		if v != "" {
			q.Set(name, v)
		}
	}
	for name, t := range map[string]time.Time{"since": f.Since, "until": f.Until} {
		if !t.IsZero() {
			q.Set(name, t.UTC().Format(time.RFC3339))
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}
