package app

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// LOG_FORMAT=auto, the default, writes JSON lines to anything that is not a
// terminal: a pipe to a log collector, a file, a buffer. text and json are
// what they say wherever the log goes.
func TestNewLoggerFormats(t *testing.T) {
	t.Parallel()
	file, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	NewLogger(file, "info", "auto").Info("to a file", "k", "v")
	written, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format   string
		line     []byte
		wantJSON bool
	}{
		{"auto (a file)", written, true},
		{"auto (a buffer)", logged("auto"), true},
		{"json", logged("json"), true},
		{"text", logged("text"), false},
	} {
		var v map[string]any
		isJSON := json.Unmarshal(tc.line, &v) == nil
		if isJSON != tc.wantJSON || !bytes.Contains(tc.line, []byte("k")) {
			t.Errorf("LOG_FORMAT=%s wrote %q: want JSON %v", tc.format, tc.line, tc.wantJSON)
		}
	}
	if line := string(logged("text")); !strings.Contains(line, "level=INFO") {
		t.Errorf("LOG_FORMAT=text wrote %q: want slog's text form", line)
	}
}

// logged is one info line as NewLogger writes it in format.
func logged(format string) []byte {
	var buf bytes.Buffer
	NewLogger(&buf, "info", format).Info("hello", "k", "v")
	return buf.Bytes()
}
