package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores/storetest/linearizable"
)

// pgServer is a PostgreSQL of the test's own, in a temporary directory on
// a free loopback port, with its durable defaults (fsync and synchronous
// commit on), that a test may crash and start again on the same data. As
// root it runs as the user postgres: PostgreSQL refuses to run as root.
type pgServer struct {
	bin, dir, port string
	cred           *syscall.Credential // nil: the test's own user
	cmd            *exec.Cmd
	exited         chan struct{}
}

// startPostgres creates a database cluster with initdb and starts it,
// stopping it and removing its files when t ends. Without the server's
// programs (initdb, postgres) t is skipped, or failed under
// REQUIRE_SERVICES=1.
func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	testenv.Integration(t)
	bin, err := postgresBin()
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL server programs (initdb, postgres)", "PATH and /usr/lib/postgresql", err)
	}
	dir, err := os.MkdirTemp("", "linearizable-postgres-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := &pgServer{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			testenv.Unreachable(t, "the user postgres (to run PostgreSQL as root)", "/etc/passwd", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// --no-sync spares only initdb's own flush; the server runs with fsync.
	initdb := p.command("initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, p.port, _ = net.SplitHostPort(addr)
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p
}

// postgresBin finds the directory of the server's programs: pg_config's
// bindir, else the newest /usr/lib/postgresql/*/bin (Debian keeps them off
// PATH).
func postgresBin() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		bin := string(out[:len(out)-1])
		if _, err := os.Stat(filepath.Join(bin, "initdb")); err == nil {
			return bin, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb found")
}

func version(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

func (p *pgServer) data() string { return filepath.Join(p.dir, "data") }

func (p *pgServer) url() string {
	return "postgres://postgres@127.0.0.1:" + p.port + "/postgres?sslmode=disable"
}

func (p *pgServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// start runs the server on its data and waits until it accepts
// connections, after crash recovery if it crashed.
func (p *pgServer) start() error {
	log, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the child keeps its own descriptor
	p.cmd = p.command("postgres", "-D", p.data(), "-p", p.port, "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+p.dir, "-c", "max_connections=100")
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	exited := make(chan struct{})
	p.exited = exited
	go func(cmd *exec.Cmd) { _ = cmd.Wait(); close(exited) }(p.cmd)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, p.url())
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
			return fmt.Errorf("postgres exited at start: %s", out)
		case <-ctx.Done():
			return fmt.Errorf("postgres not accepting connections: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// halt signals the server and waits until it has exited: SIGQUIT for an
// immediate shutdown (no checkpoint: the next start recovers from the
// write-ahead log, as after a crash), SIGINT for a fast one.
func (p *pgServer) halt(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *pgServer) stop() { p.halt(syscall.SIGINT) }

// crash shuts the server down immediately, keeps it down a moment and
// starts it again.
func (p *pgServer) crash() linearizable.Fault {
	f := linearizable.Fault{
		Name: "PostgreSQL crashed (immediate shutdown) and restarted", Start: 700 * time.Millisecond,
		Inject: func(context.Context) error {
			p.halt(syscall.SIGQUIT)
			time.Sleep(150 * time.Millisecond)
			return p.start()
		},
	}
	if linearizable.Long() {
		f.Every = 4 * time.Second
	}
	return f
}
