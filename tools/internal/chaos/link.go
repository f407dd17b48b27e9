package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/onceflow/onceflow/internal/testenv"
)

// Link is a Toxiproxy proxy between a row's instances and one service
// they reach over TCP (a record store, a broker): a row's network faults
// are done to its links, never to the service the other rows share.
type Link struct {
	Addr string // where the instances connect, 127.0.0.1:port

	proxy *toxiclient.Proxy
}

// NewLink starts a link to upstream (host:port) on a free loopback port;
// it is deleted when t ends.
func NewLink(t testing.TB, name, upstream string) *Link {
	t.Helper()
	server, err := toxiproxyServer()
	if err != nil {
		t.Fatal(err)
	}
	// Every row's links share the server: names must not repeat.
	p, err := server.CreateProxy(name+"-"+strings.ToLower(testenv.NewID()[:8]), "127.0.0.1:0", upstream)
	if err != nil {
		t.Fatalf("starting link %s to %s: %v", name, upstream, err)
	}
	t.Cleanup(func() { _ = p.Delete() })
	return &Link{Addr: p.Listen, proxy: p}
}

// Cut takes the link down: its connections are closed and new ones are
// refused, as when the service behind it goes away. Restore brings it back
// on the same address.
func (l *Link) Cut() error { return l.proxy.Disable() }

// Restore undoes Cut.
func (l *Link) Restore() error { return l.proxy.Enable() }

// Retarget points the link at another upstream, as a virtual IP moves to
// a promoted replica: its connections are closed, new ones reach upstream.
func (l *Link) Retarget(upstream string) error {
	l.proxy.Upstream = upstream
	return l.proxy.Save()
}

// The directions of a toxic: toward the service, and back from it.
const (
	Upstream   = "upstream"
	Downstream = "downstream"
)

// Add adds Toxiproxy's toxic kind (latency, timeout, ...) with attrs to
// one direction of every connection through the link, open and to come,
// under name, until Remove.
func (l *Link) Add(name, kind, direction string, attrs map[string]any) error {
	if _, err := l.proxy.AddToxic(name, kind, direction, 1, attrs); err != nil {
		return fmt.Errorf("adding toxic %s to link %s: %w", name, l.proxy.Name, err)
	}
	return nil
}

// Remove takes the toxic name away.
func (l *Link) Remove(name string) error {
	if err := l.proxy.RemoveToxic(name); err != nil {
		return fmt.Errorf("removing toxic %s from link %s: %w", name, l.proxy.Name, err)
	}
	return nil
}

// Silence stops data in direction (or both, with no direction) from
// passing, without closing anything: a partition, or with Downstream
// alone a half-open connection whose requests arrive and whose answers do
// not. The returned function ends it.
func (l *Link) Silence(directions ...string) (func() error, error) {
	if len(directions) == 0 {
		directions = []string{Upstream, Downstream}
	}
	var names []string
	undo := func() error {
		for _, n := range names {
			if err := l.Remove(n); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range directions {
		name := "silence_" + d
		if err := l.Add(name, "timeout", d, map[string]any{"timeout": 0}); err != nil {
			_ = undo()
			return nil, err
		}
		names = append(names, name)
	}
	return undo, nil
}

// toxiproxyModule is the Toxiproxy whose client the links use and whose
// server toxiproxyServer runs, at the version tools/go.mod requires.
const toxiproxyModule = "github.com/Shopify/toxiproxy/v2"

// toxi is the Toxiproxy server of this test process.
var toxi struct {
	once   sync.Once
	dir    string
	cmd    *exec.Cmd
	client *toxiclient.Client
	err    error
}

// toxiproxyServer starts, once per test process, Toxiproxy's server on a
// free loopback port — installed with go install at the version
// tools/go.mod requires of its client, so that only the client's module,
// which needs the standard library alone, is in the tools' module graph —
// and returns its client. StopToxiproxy stops it.
func toxiproxyServer() (*toxiclient.Client, error) {
	tp := &toxi
	tp.once.Do(func() {
		version, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", toxiproxyModule).Output()
		if err != nil {
			tp.err = fmt.Errorf("finding the version of %s: %w", toxiproxyModule, err)
			return
		}
		if tp.dir, tp.err = os.MkdirTemp("", "onceflow-toxiproxy-"); tp.err != nil {
			return
		}
		install := exec.Command("go", "install", toxiproxyModule+"/cmd/server@"+strings.TrimSpace(string(version)))
		install.Env = append(os.Environ(), "GOBIN="+tp.dir, "GOFLAGS=")
		if out, err := install.CombinedOutput(); err != nil {
			tp.err = fmt.Errorf("installing Toxiproxy's server: %w\n%s", err, out)
			return
		}
		addr, err := testenv.FreeAddr()
		if err != nil {
			tp.err = err
			return
		}
		host, port, _ := strings.Cut(addr, ":")
		logs, err := os.Create(filepath.Join(tp.dir, "toxiproxy.log"))
		if err != nil {
			tp.err = err
			return
		}
		tp.cmd = exec.Command(filepath.Join(tp.dir, "server"), "-host", host, "-port", port)
		tp.cmd.Stdout, tp.cmd.Stderr = logs, logs
		tp.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if tp.err = tp.cmd.Start(); tp.err != nil {
			return
		}
		tp.client = toxiclient.NewClient(addr)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := tp.client.Version(); err == nil {
				return
			} else if time.Now().After(deadline) {
				tp.err = fmt.Errorf("the Toxiproxy server on %s did not answer within 30s: %w", addr, err)
				return
			}
		}
	})
	return tp.client, tp.err
}

// StopToxiproxy stops the server toxiproxyServer started, if it did.
func StopToxiproxy() {
	if toxi.cmd != nil && toxi.cmd.Process != nil {
		_ = toxi.cmd.Process.Kill()
		_ = toxi.cmd.Wait()
	}
	if toxi.dir != "" {
		_ = os.RemoveAll(toxi.dir)
	}
}
