package app

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/internal/testenv"
)

// A message's correlation id is on every line logged about it, unless a
// producer sent one too long to repeat on each.
func TestLogContextBoundsTheCorrelationID(t *testing.T) {
	for _, tc := range []struct {
		id     string
		logged bool
	}{
		{"9b2f6a3e-1c4d-4a8e-b0f7-2d5c8e1a6b94", true},
		{strings.Repeat("c", maxCorrelationID), true},
		{strings.Repeat("c", maxCorrelationID+1), false},
		{strings.Repeat("c", 1<<20), false},
	} {
		var logs testenv.Buffer
		logger := withContextAttrs(slog.New(slog.NewTextHandler(&logs, nil)))
		msg := message.NewMessage("uuid-1", nil)
		wmmw.SetCorrelationID(tc.id, msg)
		_, _ = logContext(func(msg *message.Message) ([]*message.Message, error) {
			logger.InfoContext(msg.Context(), "handling")
			return nil, nil
		})(msg)
		if got := strings.Contains(logs.String(), "correlation_id="+tc.id); got != tc.logged {
			t.Errorf("a correlation id of %d bytes logged: %v, want %v", len(tc.id), got, tc.logged)
		}
		if len(logs.String()) > 512 {
			t.Errorf("a correlation id of %d bytes made a log line of %d bytes", len(tc.id), len(logs.String()))
		}
	}
}
