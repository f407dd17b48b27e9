package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServerService names a redis-server started by a test in skip and
// failure messages.
const redisServerService = "redis-server"

// node is one redis-server process this process started.
type node struct {
	cmd    *exec.Cmd
	addr   string
	log    string
	exited chan struct{} // closed when the process has exited
}

// startRedisServer starts redis-server on a loopback port, in the
// foreground, with its files in dir and args added to its command line.
func startRedisServer(server, dir string, port int, args ...string) (*node, error) {
	p := strconv.Itoa(port)
	n := &node{
		addr:   net.JoinHostPort("127.0.0.1", p),
		log:    filepath.Join(dir, "redis-"+p+".log"),
		exited: make(chan struct{}),
	}
	base := []string{
		"--port", p,
		"--bind", "127.0.0.1",
		"--daemonize", "no",
		"--dir", dir,
		"--logfile", n.log,
	}
	n.cmd = exec.Command(server, append(base, args...)...)
	n.cmd.SysProcAttr = DieWithParent()
	if err := n.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = n.cmd.Wait()
		close(n.exited)
	}()
	return n, nil
}

// waitReady waits until the node answers PING.
func (n *node) waitReady(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1})
	defer c.Close()
	return poll(ctx, n, func() error { return c.Ping(ctx).Err() })
}

// stop kills the process and waits for it to exit.
func (n *node) stop() {
	_ = n.cmd.Process.Kill()
	<-n.exited
}

// shutdown stops the process as SIGTERM does — with an append-only file it
// is flushed first — and kills it if it has not exited within 20 s.
func (n *node) shutdown() {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(20 * time.Second):
		n.stop()
	}
}

// RedisProcess is a redis-server that a test started for itself, with
// settings of its own; see RedisServer. Its methods are not safe for
// concurrent use.
type RedisProcess struct {
	mu     sync.Mutex // guards n against the test's cleanup
	n      *node
	server string
	dir    string
	args   []string
}

// Addr is the server's host:port on loopback.
func (p *RedisProcess) Addr() string { return p.n.addr }

// Stop kills the server and waits for it to exit. It is safe to call more
// than once; the test's cleanup calls it too.
func (p *RedisProcess) Stop() { p.node().stop() }

// Shutdown stops the server as SIGTERM does: with an append-only file its
// writes are flushed first; without persistence every key is gone.
func (p *RedisProcess) Shutdown() { p.node().shutdown() }

// Restart starts the server again, stopped or not, on the same port and
// files, with the same settings, and waits until it answers.
func (p *RedisProcess) Restart() error {
	n := p.node()
	n.stop()
	_, port, _ := net.SplitHostPort(n.addr)
	portNum, _ := strconv.Atoi(port)
	next, err := startRedisServer(p.server, p.dir, portNum, p.args...)
	if err != nil {
		return fmt.Errorf("restarting redis-server on %s: %w", n.addr, err)
	}
	p.mu.Lock()
	p.n = next
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return next.waitReady(ctx)
}

func (p *RedisProcess) node() *node {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Client returns a client of the server, closed when t ends.
func (p *RedisProcess) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: p.n.addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// RedisServer starts a redis-server of the test's own on a free loopback
// port, with args added to its command line (for example "--appendonly",
// "yes"), waits until it answers, and stops it when t ends. Use it where a
// test needs settings the shared Redis does not have, or must stop a server.
// Without redis-server on PATH, t is skipped, or failed under
// REQUIRE_SERVICES=1.
func RedisServer(t testing.TB, args ...string) *RedisProcess {
	t.Helper()
	Integration(t)
	server, err := exec.LookPath("redis-server")
	if err != nil {
		Unreachable(t, redisServerService, "127.0.0.1", err)
	}
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		n, err := tryStartRedisServer(server, dir, args)
		if err == nil {
			p := &RedisProcess{n: n, server: server, dir: dir, args: args}
			t.Cleanup(p.Stop)
			return p
		}
		if !errors.Is(err, errNodeExited) || attempt == 3 {
			t.Fatalf("starting redis-server %v: %v", args, err)
		}
	}
}

// tryStartRedisServer starts one server on a port that was free a moment
// ago; a server that lost its port to another process exits, which the
// caller retries.
func tryStartRedisServer(server, dir string, args []string) (*node, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	n, err := startRedisServer(server, dir, ports[0], args...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.waitReady(ctx); err != nil {
		n.stop()
		if log, _ := os.ReadFile(n.log); len(log) > 0 && !errors.Is(err, errNodeExited) {
			return nil, errors.Join(err, errors.New(string(log)))
		}
		return nil, err
	}
	return n, nil
}

// RedisReplica starts a replica of master, like RedisServer with args, and
// waits until master counts it as online: from then on WAIT on master
// counts it. Start master with "--repl-diskless-sync-delay", "0" to skip
// the 5 s that master otherwise waits for more replicas before syncing.
func RedisReplica(t testing.TB, master *RedisProcess, args ...string) *RedisProcess {
	t.Helper()
	return RedisReplicaVia(t, master, master.Addr(), args...)
}

// RedisReplicaVia is RedisReplica replicating through via, the address
// of a proxy in front of master (a slow link between zones, say).
func RedisReplicaVia(t testing.TB, master *RedisProcess, via string, args ...string) *RedisProcess {
	t.Helper()
	host, port, _ := strings.Cut(via, ":")
	replica := RedisServer(t, append(args, "--replicaof", host, port)...)
	c := master.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := poll(ctx, replica.n, func() error {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && !strings.Contains(info, ",state=online,") {
			err = errors.New("replica not online")
		}
		return err
	})
	if err != nil {
		t.Fatalf("replica %s of %s: %v", replica.Addr(), master.Addr(), err)
	}
	return replica
}
