package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

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

// do sends one request. An answer other than 200 is an error carrying the
// problem's status and detail.
func (c *Client) do(ctx context.Context, method, action string, t Target, q url.Values) (Record, error) {
	if q == nil {
		q = url.Values{}
	}
	for name, v := range map[string]string{"key": t.Key, "route": t.Route, "client": t.Client} {
		if v != "" {
			q.Set(name, v)
		}
	}
	u := strings.TrimRight(c.BaseURL, "/") + "/admin/keys/" + url.PathEscape(t.Handler) + action + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return Record{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Record{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Record{}, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var d problem.Details
		if json.Unmarshal(body, &d) == nil && d.Detail != "" {
			return Record{}, fmt.Errorf("%s: %s", resp.Status, d.Detail)
		}
		if resp.StatusCode == http.StatusNotFound {
			return Record{}, fmt.Errorf("%s: the service serves no key admin: set ADMIN_API_KEYS on it", resp.Status)
		}
		return Record{}, fmt.Errorf("%s", resp.Status)
	}
	var r Record
	if err := json.Unmarshal(body, &r); err != nil {
		return Record{}, fmt.Errorf("decoding the record: %w", err)
	}
	return r, nil
}
