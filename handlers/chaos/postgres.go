package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/internal/testenv"
)

// postgresBin is where the PostgreSQL server binaries of this machine live.
const postgresBin = "/usr/lib/postgresql/15/bin"

// PostgresServer is a PostgreSQL of a row's own, on a free loopback port
// with its data directory in a directory of its own, that can be stopped
// and started again on the same data. It runs with PostgreSQL's durable
// defaults (fsync on, synchronous_commit on) and trust authentication,
// as the operating-system user postgres, since PostgreSQL refuses to run
// as root.
type PostgresServer struct {
	Addr string

	dir     string // owned by postgres: data/, the socket and postgres.log
	cred    *syscall.Credential
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile *os.File
}

// NewPostgresServer creates a database cluster with initdb in a new
// temporary directory owned by the user postgres. Close removes it.
func NewPostgresServer() (*PostgresServer, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("looking up the user postgres: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	addr, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chaos-postgres-")
	if err != nil {
		return nil, err
	}
	p := &PostgresServer{Addr: addr, dir: dir, cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("handing %s to the user postgres: %w", dir, err)
	}
	// --no-sync only spares initdb's own flush of the fresh cluster; the
	// server itself runs with fsync on.
	initdb := exec.Command(filepath.Join(postgresBin, "initdb"), "-D", p.dataDir(), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	return p, nil
}

func (p *PostgresServer) dataDir() string { return filepath.Join(p.dir, "data") }

// URL is the DATABASE_URL of the server's database postgres.
func (p *PostgresServer) URL() string {
	return "postgres://postgres@" + p.Addr + "/postgres?sslmode=disable"
}

// LogPath is the server's log file.
func (p *PostgresServer) LogPath() string { return filepath.Join(p.dir, "postgres.log") }

// Start runs the server on the cluster's data and waits until it accepts
// connections. A start while it runs is an error.
func (p *PostgresServer) Start() error {
	if p.cmd != nil {
		return fmt.Errorf("postgres on %s is already running", p.Addr)
	}
	_, port, _ := net.SplitHostPort(p.Addr)
	logs, err := os.OpenFile(p.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(postgresBin, "postgres"), "-D", p.dataDir(), "-p", port,
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+p.dir,
		"-c", "max_connections=200", "-c", "log_min_messages=warning", "-c", "log_connections=off")
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logs.Close()
		return fmt.Errorf("starting postgres: %w", err)
	}
	p.cmd, p.logFile, p.exited = cmd, logs, make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(cmd, p.exited)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			p.cmd = nil
			_ = logs.Close()
			return fmt.Errorf("postgres on %s exited at start: %s", p.Addr, tail(p.LogPath(), 10))
		default:
		}
		if p.ping() == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("postgres on %s not accepting connections: %s", p.Addr, tail(p.LogPath(), 10))
}

func (p *PostgresServer) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// Stop shuts the server down with a fast shutdown (SIGINT): open
// transactions are rolled back, clients disconnected, and a checkpoint
// written; it waits until the server has exited.
func (p *PostgresServer) Stop() error {
	if p.cmd == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		err = fmt.Errorf("postgres on %s did not shut down within 30s; killed", p.Addr)
	}
	_ = p.logFile.Close()
	p.cmd = nil
	return err
}

// Close stops the server and removes its directory.
func (p *PostgresServer) Close() error {
	err := p.Stop()
	if rmErr := os.RemoveAll(p.dir); err == nil {
		err = rmErr
	}
	return err
}
