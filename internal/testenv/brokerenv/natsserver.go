package brokerenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceflow/onceflow/internal/testenv"
)

// natsServerService names a nats-server started by a test in skip and
// failure messages; natsServerHow tells how to provide it.
const (
	natsServerService = "nats-server"
	natsServerHow     = "install nats-server (the tests start their own)"
)

// NATSProcess is a nats-server with JetStream that a test started for
// itself, its store on disk in a directory of the test's; see NATSServer.
// Its methods are not safe for concurrent use.
type NATSProcess struct {
	mu     sync.Mutex // guards cmd and exited against the test's cleanup
	cmd    *exec.Cmd
	exited chan struct{}
	server string
	dir    string
	port   int
	token  string // required of clients when set
}

// URL is the server's nats:// URL on loopback, with the token the server
// requires, if any, as its user.
func (p *NATSProcess) URL() string {
	if p.token != "" {
		return "nats://" + p.token + "@" + p.Addr()
	}
	return "nats://" + p.Addr()
}

// Addr is the server's host:port on loopback.
func (p *NATSProcess) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Stop kills the server (SIGKILL: no goodbye to its clients) and waits for
// it to exit. Safe to call more than once; the test's cleanup calls it.
func (p *NATSProcess) Stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	<-exited
}

// Start starts the server again after Stop, on the same port and store,
// and waits until JetStream answers.
func (p *NATSProcess) Start() error {
	if err := p.start(); err != nil {
		return err
	}
	return p.waitReady()
}

func (p *NATSProcess) start() error {
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(p.port), "-js", "-sd", p.dir, "-l", filepath.Join(p.dir, "nats.log")}
	if p.token != "" {
		args = append(args, "--auth", p.token)
	}
	cmd := exec.Command(p.server, args...)
	cmd.SysProcAttr = testenv.DieWithParent()
	exited, err := testenv.StartWatched(cmd)
	if err != nil {
		return fmt.Errorf("starting nats-server on %s: %w", p.Addr(), err)
	}
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	return nil
}

// waitReady waits up to 10 s for JetStream to answer.
func (p *NATSProcess) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var last error
	for {
		nc, err := nats.Connect(p.URL(), nats.Timeout(time.Second), nats.NoReconnect())
		if err == nil {
			var js nats.JetStreamContext
			if js, err = nc.JetStream(); err == nil {
				_, err = js.AccountInfo()
			}
			nc.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-p.exited:
			log, _ := os.ReadFile(filepath.Join(p.dir, "nats.log"))
			return fmt.Errorf("nats-server on %s exited: %s", p.Addr(), log)
		case <-ctx.Done():
			return fmt.Errorf("nats-server on %s: JetStream not ready within 10s: %w", p.Addr(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NATSServer starts a nats-server with JetStream of the test's own on a
// free loopback port, its store in a temporary directory, waits until
// JetStream answers, and stops it when t ends. Use it where a test must
// stop and restart a server; the shared one must never be stopped.
// Without nats-server on PATH, t is skipped, or failed under
// REQUIRE_SERVICES=1.
func NATSServer(t testing.TB) *NATSProcess {
	t.Helper()
	return NATSServerWithToken(t, "")
}

// NATSServerWithToken is NATSServer requiring token of its clients (none
// when token is ""); URL carries it.
func NATSServerWithToken(t testing.TB, token string) *NATSProcess {
	t.Helper()
	testenv.Integration(t)
	server, err := exec.LookPath("nats-server")
	if err != nil {
		testenv.UnreachableHow(t, natsServerService, "127.0.0.1", err, natsServerHow)
	}
	for attempt := 1; ; attempt++ {
		ports, err := testenv.FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		p := &NATSProcess{server: server, dir: t.TempDir(), port: ports[0], token: token}
		if err = p.start(); err == nil {
			if err = p.waitReady(); err == nil {
				t.Cleanup(p.Stop)
				return p
			}
			p.Stop()
		}
		if attempt == 3 { // the port may have been taken meanwhile
			t.Fatalf("starting nats-server: %v", err)
		}
	}
}
