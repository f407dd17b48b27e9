package app

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// Closed by default: without API_KEYS the service does not start (so no
// caller can be replayed another's response, nor read what another
// created), and its one line names both ways out. An empty API_KEYS is
// unset.
func TestStartRefusedWithoutAPIKeys(t *testing.T) {
	for _, environ := range [][]string{nil, {"API_KEYS= "}, {"ALLOW_ANONYMOUS=false"}} {
		cfg, err := LoadConfig(append([]string{"HTTP_ADDR=127.0.0.1:0"}, environ...))
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(t.Context(), cfg, testdomain.Domain(), slog.New(slog.DiscardHandler))
		if err == nil {
			_ = a.Close()
			t.Fatalf("New with %q started an API open to anyone", environ)
		}
		if msg := err.Error(); !strings.Contains(msg, "API_KEYS is unset") || !strings.Contains(msg, "ALLOW_ANONYMOUS=true") ||
			strings.Contains(msg, "\n") {
			t.Errorf("New with %q: %q, want one line naming API_KEYS and ALLOW_ANONYMOUS=true", environ, msg)
		}
	}
}

// ALLOW_ANONYMOUS=true opens the API, with a warning at start-up; beside
// API_KEYS it changes nothing, and says so.
func TestAllowAnonymousWarns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		want    string // the warning; "" for none
	}{
		{"anonymous", []string{"ALLOW_ANONYMOUS=true"}, "ALLOW_ANONYMOUS=true and API_KEYS unset: the API serves every caller as one anonymous client"},
		{"with keys too", []string{"API_KEYS=key-of-client-a-0123456789:client-a", "ALLOW_ANONYMOUS=true"}, "ALLOW_ANONYMOUS=true changes nothing: API_KEYS is set"},
		{"keys", []string{"API_KEYS=key-of-client-a-0123456789:client-a"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testenv.Buffer
			a := startAppLogging(t, seams{}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})), tc.environ...)
			got := logs.String()
			if tc.want == "" {
				if strings.Contains(got, "ALLOW_ANONYMOUS") {
					t.Errorf("logged %q, want no word of ALLOW_ANONYMOUS", got)
				}
			} else if !strings.Contains(got, "level=WARN") || !strings.Contains(got, tc.want) {
				t.Errorf("logged %q, want a warning %q", got, tc.want)
			}
			status := a.send(t, http.DefaultClient, http.MethodGet, "/v1/summary", "").status
			if open := tc.name == "anonymous"; open != (status == http.StatusOK) {
				t.Errorf("GET /v1/summary without a key: %d", status)
			}
		})
	}
}
