package provider_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/internal/testenv"
)

// `onceflow provider` serves until it is told to stop, on its own
// database when PROVIDER_DATABASE_URL names one.
func TestCommand(t *testing.T) {
	t.Parallel()
	for name, environ := range map[string]func(t *testing.T) []string{
		"memory":   func(*testing.T) []string { return nil },
		"postgres": func(t *testing.T) []string { return []string{"PROVIDER_DATABASE_URL=" + testenv.PostgresSchema(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := domain.CommandEnv{Args: []string{"--addr", "127.0.0.1:0"}, Environ: environ(t), Stdout: io.Discard}
			var logs testenv.Buffer
			env.Stderr = &logs
			ctx, stop := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- provider.Command().Run(ctx, env) }()
			serving := regexp.MustCompile(`msg="payment provider serving" url=(\S+) store=` + name)
			var url string
			testenv.WaitFor(t, 20*time.Second, "the provider serving", func() bool {
				m := serving.FindStringSubmatch(logs.String())
				if m != nil {
					url = m[1]
				}
				return m != nil
			})
			resp, err := http.Post(url+"/charges", "application/json", strings.NewReader(chargeBody))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("POST /charges: %s", resp.Status)
			}
			stop()
			if err := <-done; err != nil {
				t.Errorf("the command returned %v, want nil\n%s", err, logs.String())
			}
		})
	}
}

func TestCommandArguments(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"serve"}, {"--port", "1"}} {
		if err := provider.Command().Run(t.Context(), domain.CommandEnv{Args: args, Stdout: io.Discard, Stderr: io.Discard}); err == nil {
			t.Errorf("provider %v: no error", args)
		}
	}
}
