package testdomain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/onceflow/onceflow/domain"
)

// sendCommand is `onceflow send`: it posts --count new requests to the
// running service that the settings name (HTTP_ADDR, PUBLISH_API_KEY),
// each --copies times with an Idempotency-Key of its own, so that every
// copy reaches the routes, which must handle each request once.
var sendCommand = domain.Command{
	Summary: "post requests, each several times, to a running service",
	Run:     send,
}

func send(ctx context.Context, env domain.CommandEnv) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	count := fs.Int("count", 3, "distinct requests to send")
	copies := fs.Int("copies", 2, "times to send each request")
	if err := fs.Parse(env.Args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("send takes flags only, not %q", fs.Arg(0))
	}
	if *count < 1 || *copies < 1 {
		return errors.New("--count and --copies must be at least 1")
	}
	s, err := env.Settings(env.Environ)
	if err != nil {
		return err
	}
	run := watermill.NewShortUUID()
	for i := range *count {
		body := fmt.Sprintf(`{"id":"send-%s-%d","amount":%d}`, run, i+1, i+1)
		for range *copies {
			if err := post(ctx, s, body); err != nil {
				return fmt.Errorf("sending request send-%s-%d: %w", run, i+1, err)
			}
		}
	}
	fmt.Fprintf(env.Stdout, "sent %d requests: %d ids (send-%s-1 and on) x %d copies; see %s/v1/summary\n",
		*count**copies, *count, run, *copies, s.URL)
	return nil
}

// post sends body to CreatePattern with a fresh Idempotency-Key; an answer
// other than 202 is an error.
func post(ctx context.Context, s domain.Settings, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/charges", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", watermill.NewUUID())
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /v1/charges: %s", resp.Status)
	}
	return nil
}
