package consume

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// A copy in progress elsewhere is logged at Info, with the error; any
// other error at Error, also through a logger With fields.
func TestNewLoggerLogsTheDuplicateRaceAtInfo(t *testing.T) {
	var b strings.Builder
	l := NewLogger(slog.New(slog.NewTextHandler(&b, nil))).With(map[string]any{"handler": "charge"})
	l.Error("Handler returned error", fmt.Errorf("key k: %w", receiver.ErrInProgress), nil)
	l.Error("Handler returned error", errors.New("provider unreachable"), nil)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "in_progress") || !strings.Contains(lines[0], "handler=charge") ||
		!strings.Contains(lines[1], "level=ERROR") || !strings.Contains(lines[1], "provider unreachable") {
		t.Fatalf("logged:\n%s\nwant the race at INFO, the other error at ERROR, both with the handler", b.String())
	}
}
