package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// Instance is one process of the suite's service binary (`faultservice
// serve`, see Build) that can be killed, stopped and started again on the
// same HTTP address, with its logs appended to one file across restarts.
type Instance struct {
	Name    string
	Addr    string // HTTP_ADDR, 127.0.0.1:port
	LogPath string

	bin string
	env []string
	// started is set once a start succeeded: from then on the instance
	// keeps its address.
	started bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	peakRSS int64 // bytes, the largest VmHWM seen over every run
}

// NewInstance prepares an instance of bin with env (KEY=VALUE, on top of
// this process's PATH and HOME) on a free loopback port, logging in JSON
// to logPath. It does not start it.
func NewInstance(name, bin, logPath string, env []string) (*Instance, error) {
	addr, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"HTTP_ADDR=" + addr, "LOG_FORMAT=json"}, env...)
	return &Instance{Name: name, Addr: addr, LogPath: logPath, bin: bin, env: env}, nil
}

// addrInUse is what the service says when its HTTP_ADDR is taken.
const addrInUse = "address already in use"

// Start runs the process and waits until /readyz answers 200, at most
// within. A start while it runs is an error. Until a start has succeeded,
// an instance whose port another process took meanwhile (the race
// testenv.FreeAddr warns of) moves to another free port and tries again,
// twice at most; later starts keep the address.
func (i *Instance) Start(within time.Duration) error {
	for attempt := 1; ; attempt++ {
		err := i.start(within)
		if err == nil {
			i.started = true
			return nil
		}
		if i.started || attempt == 3 || !strings.Contains(tail(i.LogPath, 2), addrInUse) {
			return err
		}
		addr, ferr := testenv.FreeAddr()
		if ferr != nil {
			return errors.Join(err, ferr)
		}
		i.Addr = addr
		for n, kv := range i.env {
			if strings.HasPrefix(kv, "HTTP_ADDR=") {
				i.env[n] = "HTTP_ADDR=" + addr
			}
		}
	}
}

// start runs the process once and waits until it is ready; a process
// that exits first is no longer running.
func (i *Instance) start(within time.Duration) error {
	i.mu.Lock()
	if i.cmd != nil {
		i.mu.Unlock()
		return fmt.Errorf("%s is already running", i.Name)
	}
	logs, err := os.OpenFile(i.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		i.mu.Unlock()
		return err
	}
	cmd := exec.Command(i.bin, "serve")
	cmd.Env = i.env
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logs.Close()
		i.mu.Unlock()
		return fmt.Errorf("starting %s: %w", i.Name, err)
	}
	exited := make(chan struct{})
	i.cmd, i.exited = cmd, exited
	i.mu.Unlock()
	stopSampling := make(chan struct{})
	go i.sampleRSS(cmd.Process.Pid, stopSampling)
	go func() {
		_ = cmd.Wait()
		close(stopSampling)
		_ = logs.Close()
		close(exited)
	}()
	if err = i.WaitReady(within); err != nil {
		select {
		case <-exited:
			i.mu.Lock()
			if i.exited == exited {
				i.cmd, i.exited = nil, nil
			}
			i.mu.Unlock()
		default:
		}
	}
	return err
}

// WaitReady waits until /readyz answers 200, at most within.
func (i *Instance) WaitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if i.Ready() {
			return nil
		}
		select {
		case <-i.exitedChan():
			return fmt.Errorf("%s exited before it was ready (see %s)", i.Name, i.LogPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready within %v (see %s)", i.Name, within, i.LogPath)
}

// Ready reports whether GET /readyz answers 200 within a second.
func (i *Instance) Ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+i.Addr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (i *Instance) exitedChan() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.exited == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return i.exited
}

// Kill sends SIGKILL and waits until the process is gone.
func (i *Instance) Kill() error {
	_, err := i.signal(syscall.SIGKILL, 10*time.Second)
	return err
}

// Term sends SIGTERM and returns how long the process took to exit; it
// sends SIGKILL and fails when it takes longer than within.
func (i *Instance) Term(within time.Duration) (time.Duration, error) {
	return i.signal(syscall.SIGTERM, within)
}

func (i *Instance) signal(sig syscall.Signal, within time.Duration) (time.Duration, error) {
	i.mu.Lock()
	cmd, exited := i.cmd, i.exited
	i.mu.Unlock()
	if cmd == nil {
		return 0, fmt.Errorf("%s is not running", i.Name)
	}
	start := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		return 0, fmt.Errorf("signalling %s: %w", i.Name, err)
	}
	var err error
	select {
	case <-exited:
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-exited
		err = fmt.Errorf("%s did not exit within %v of %v", i.Name, within, sig)
	}
	took := time.Since(start)
	i.mu.Lock()
	i.cmd, i.exited = nil, nil
	i.mu.Unlock()
	return took, err
}

// Suspend stops the process with SIGSTOP until Resume (SIGCONT): a long
// garbage-collection pause or a frozen VM. Its connections stay open, its
// timers stand still, and the leases it holds expire meanwhile.
func (i *Instance) Suspend() error { return i.send(syscall.SIGSTOP) }

// Resume lets a suspended process go on.
func (i *Instance) Resume() error { return i.send(syscall.SIGCONT) }

// send sends sig to the running process and returns at once.
func (i *Instance) send(sig syscall.Signal) error {
	i.mu.Lock()
	cmd := i.cmd
	i.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s is not running", i.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling %s: %w", i.Name, err)
	}
	return nil
}

// Stop kills the process if it runs; for cleanup.
func (i *Instance) Stop() {
	i.mu.Lock()
	running := i.cmd != nil
	i.mu.Unlock()
	if running {
		_ = i.Kill()
	}
}

// PeakRSS is the largest resident set (VmHWM) of any run so far, in bytes.
func (i *Instance) PeakRSS() int64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.peakRSS
}

// sampleRSS reads the process's VmHWM every 200 ms until stop closes: the
// last sample is taken at most 200 ms before the process exits.
func (i *Instance) sampleRSS(pid int, stop <-chan struct{}) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if hwm, ok := vmHWM(pid); ok {
			i.mu.Lock()
			i.peakRSS = max(i.peakRSS, hwm)
			i.mu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// vmHWM reads the peak resident set size of pid from /proc, in bytes.
func vmHWM(pid int) (int64, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
