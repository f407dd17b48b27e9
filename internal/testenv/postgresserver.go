package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresServerService names the PostgreSQL server programs a test runs
// itself in skip and failure messages.
const postgresServerService = "PostgreSQL server programs (initdb, postgres)"

// errPostgresExited reports a server that exited before it accepted
// connections: on a first start, most likely because another process took
// its port meanwhile.
var errPostgresExited = errors.New("postgres exited at start")

// PostgresProcess is a PostgreSQL that a test started for itself, with
// PostgreSQL's durable defaults (fsync and synchronous_commit on) and trust
// authentication; see PostgresServer. Its methods are not safe for
// concurrent use.
type PostgresProcess struct {
	mu     sync.Mutex // guards cmd and exited against the test's cleanup
	cmd    *exec.Cmd  // nil while stopped
	exited chan struct{}
	bin    string              // the directory of initdb and postgres
	dir    string              // data/, the socket and postgres.log
	cred   *syscall.Credential // nil: the test's own user
	port   int
}

// Addr is the server's host:port on loopback.
func (p *PostgresProcess) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// URL is the connection URL of the server's database postgres, as the
// user postgres.
func (p *PostgresProcess) URL() string {
	return "postgres://postgres@" + p.Addr() + "/postgres?sslmode=disable"
}

// LogPath is the server's log file; every start appends to it.
func (p *PostgresProcess) LogPath() string { return filepath.Join(p.dir, "postgres.log") }

// Start starts the server again after Stop or Crash, on the same port and
// data, and waits up to a minute until it accepts connections — after
// replaying its write-ahead log if it crashed. A start while it runs is an
// error.
func (p *PostgresProcess) Start() error {
	p.mu.Lock()
	running := p.cmd != nil
	p.mu.Unlock()
	if running {
		return fmt.Errorf("postgres on %s is already running", p.Addr())
	}
	logs, err := os.OpenFile(p.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logs.Close() // the server writes to a descriptor of its own
	// max_connections is twice the default: the fault suite's rows run
	// several instances, each with a pool, on one server.
	cmd := p.command("postgres", "-D", p.dataDir(), "-p", strconv.Itoa(p.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+p.dir, "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logs, logs
	exited, err := StartWatched(cmd)
	if err != nil {
		return fmt.Errorf("starting postgres on %s: %w", p.Addr(), err)
	}
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	if err := p.waitReady(); err != nil {
		p.halt(syscall.SIGKILL)
		return err
	}
	return nil
}

// waitReady waits up to a minute until the server accepts a connection,
// giving each attempt 2 s.
func (p *PostgresProcess) waitReady() error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, p.URL())
		if err == nil {
			err = conn.Close(ctx)
			cancel()
			return err
		}
		cancel()
		select {
		case <-p.exited:
			return fmt.Errorf("%w on %s: %s", errPostgresExited, p.Addr(), lastLines(p.LogPath(), 20))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres on %s not accepting connections within a minute: %w\n%s",
				p.Addr(), err, lastLines(p.LogPath(), 20))
		}
	}
}

// Stop shuts the server down with a fast shutdown (SIGINT): open
// transactions roll back, clients are disconnected and a checkpoint is
// written. It waits until the server has exited, killing it after 30 s,
// which is an error. Stopping a stopped server does nothing; the test's
// cleanup stops it too.
func (p *PostgresProcess) Stop() error {
	if p.halt(syscall.SIGINT) {
		return fmt.Errorf("postgres on %s did not shut down within 30s; killed", p.Addr())
	}
	return nil
}

// Crash stops the server with an immediate shutdown (SIGQUIT) and waits
// until it has exited: every server process quits at once, without a
// checkpoint, and the next Start recovers from the write-ahead log, as
// after a crash. Committed transactions survive it, because they are in
// the log, flushed at commit. It is not SIGKILL: killed, the postmaster
// cannot pass the signal on, its backends keep serving their connections,
// and a new server refuses to start on shared memory they still hold.
func (p *PostgresProcess) Crash() { p.halt(syscall.SIGQUIT) }

// halt sends sig to the server, if it runs, and waits until it has
// exited, killing it after 30 s; it reports whether it had to.
func (p *PostgresProcess) halt(sig syscall.Signal) (killed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		killed = sig != syscall.SIGKILL
	}
	p.cmd = nil
	return killed
}

func (p *PostgresProcess) dataDir() string { return filepath.Join(p.dir, "data") }

// command runs one of the server's programs in its directory, as its user,
// killed if the test process dies.
func (p *PostgresProcess) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = DieWithParent()
	if p.cred != nil {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Credential = p.cred
	}
	return cmd
}

// PostgresServer creates a database cluster of the test's own with initdb,
// starts PostgreSQL on it on a free loopback port, waits until it accepts
// connections, and stops it and removes its files when t ends. Use it
// where a test must stop, crash or restart the server; the shared one must
// never be stopped. Run as root, the server runs as the user postgres,
// since PostgreSQL refuses to run as root. Without the server's programs
// t is skipped, or failed under REQUIRE_SERVICES=1.
func PostgresServer(t testing.TB) *PostgresProcess {
	t.Helper()
	Integration(t)
	bin, err := postgresBin()
	if err != nil {
		Unreachable(t, postgresServerService, "pg_config --bindir and /usr/lib/postgresql", err)
	}
	// Not under t.TempDir, whose parent the user postgres may not enter;
	// a short path also keeps the socket's within the kernel's limit.
	dir, err := os.MkdirTemp("", "postgres-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := &PostgresProcess{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			Unreachable(t, "the user postgres (to run PostgreSQL as root)", "/etc/passwd", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// --no-sync spares only initdb's own flush of the fresh cluster; the
	// server runs with fsync on.
	initdb := p.command("initdb", "-D", p.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	for attempt := 1; ; attempt++ {
		ports, err := FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		p.port = ports[0]
		err = p.Start()
		if err == nil {
			t.Cleanup(func() {
				if err := p.Stop(); err != nil {
					t.Log(err)
				}
			})
			return p
		}
		if !errors.Is(err, errPostgresExited) || attempt == 3 {
			t.Fatal(err)
		}
	}
}

// postgresBin finds the directory of the server's programs: pg_config's
// bindir, else the newest /usr/lib/postgresql/*/bin (Debian keeps them off
// PATH).
func postgresBin() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		bin := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(bin, "initdb")); err == nil {
			return bin, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(bin string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb found")
}

// lastLines returns the last n lines of the file at path.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
