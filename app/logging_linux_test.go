package app

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// On a terminal, LOG_FORMAT=auto writes text for the person reading it.
func TestNewLoggerAutoOnTerminal(t *testing.T) {
	t.Parallel()
	tty, read := openPTY(t)
	NewLogger(tty, "info", "auto").Info("hello", "k", "v")
	line, err := bufio.NewReader(read).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "level=INFO") || strings.HasPrefix(line, "{") {
		t.Errorf("LOG_FORMAT=auto on a terminal wrote %q: want text", line)
	}
}

// openPTY opens a pseudo-terminal: the terminal end to write to, and the
// other end that reads what was written.
func openPTY(t *testing.T) (tty, read *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { _ = tty.Close() })
	return tty, ptmx
}
