package chaos

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server of a row's own, on a free port with its
// data in dir, that can be stopped, started again and paused.
type RedisServer struct {
	Addr string

	dir     string
	durable bool
	cmd     *exec.Cmd
	exited  chan struct{}
}

// NewRedisServer prepares a redis-server in dir. Durable runs it with an
// append-only file (appendonly yes, appendfsync everysec); otherwise
// without any persistence (save "", appendonly no), as docker-compose.yml
// once shipped it.
func NewRedisServer(dir string, durable bool) (*RedisServer, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return &RedisServer{Addr: addr, dir: dir, durable: durable}, nil
}

// URL is the REDIS_URL of the server.
func (r *RedisServer) URL() string { return "redis://" + r.Addr + "/0" }

// Start runs the server and waits until it answers PING.
func (r *RedisServer) Start() error {
	_, port, _ := net.SplitHostPort(r.Addr)
	args := []string{"--port", port, "--bind", "127.0.0.1", "--dir", r.dir, "--save", "", "--daemonize", "no",
		"--maxmemory-policy", "noeviction", "--logfile", "redis.log"}
	if r.durable {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec")
	} else {
		args = append(args, "--appendonly", "no")
	}
	r.cmd = exec.Command("redis-server", args...)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	r.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(r.cmd, r.exited)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r.do(context.Background(), "PING") == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s not answering (see %s/redis.log)", r.Addr, r.dir)
}

// Stop shuts the server down as `SIGTERM` does: with an append-only file
// it is flushed first; without persistence every key is gone.
func (r *RedisServer) Stop() error {
	if r.cmd == nil {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	r.cmd = nil
	return nil
}

// Pause makes the server unresponsive to every client for d (CLIENT PAUSE
// d ALL): connections stay open, commands wait.
func (r *RedisServer) Pause(d time.Duration) error {
	return r.do(context.Background(), "CLIENT", "PAUSE", strconv.FormatInt(d.Milliseconds(), 10), "ALL")
}

func (r *RedisServer) do(ctx context.Context, args ...any) error {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	return c.Do(ctx, args...).Err()
}
