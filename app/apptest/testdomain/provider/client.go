package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/onceflow/onceflow/problem"
)

// ErrRefused matches the error of a charge the provider refused for good
// (see [Provider.Refuse]): sent again as it is, it is refused again.
var ErrRefused = errors.New("refused for good")

// Charge asks the provider at baseURL, through hc, to charge amount for
// ref, and returns the charge's id: a new charge's, or the first one's
// when the request repeats an Idempotency-Key. Give hc the transport
// [github.com/onceflow/onceflow/middleware.EffectKeys], so that a charge
// made in a receiver's run carries the run's effect key as its key. An
// answer other than 201 is an error; the provider's refusal (422 of
// problem type RefusedType) is one matching [ErrRefused], with its reason.
func Charge(ctx context.Context, hc *http.Client, baseURL, ref string, amount int64) (string, error) {
	body, _ := json.Marshal(map[string]any{"ref": ref, "amount": amount})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(baseURL, "/")+"/charges", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("charging at the provider: %w", err)
	}
	defer resp.Body.Close()
	var c charge
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode == http.StatusUnprocessableEntity {
		var d problem.Details
		if json.Unmarshal(answer, &d) == nil && d.Type == RefusedType {
			return "", fmt.Errorf("charging at the provider: %w: %s", ErrRefused, d.Detail)
		}
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("charging at the provider: %s: %s", resp.Status, bytes.TrimSpace(answer))
	}
	if err := json.Unmarshal(answer, &c); err != nil || c.ID == "" {
		return "", fmt.Errorf("charging at the provider: an unreadable charge %q", answer)
	}
	return c.ID, nil
}
