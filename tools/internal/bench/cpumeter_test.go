package bench

import (
	"crypto/sha256"
	"os"
	"strings"
	"testing"
	"time"
)

// A profiled span reads the machine's busy time and this process's
// profile; the meter can watch this very process as a peer.
func TestCPUMeter(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	m := NewCPUMeter(true, FindPeers(strings.TrimSpace(string(comm)), "no-such-command"))
	m.Stop() // before Start: nothing read, and Start no longer counts
	m.Start()
	if _, ok := m.Use(); ok {
		t.Error("a meter stopped before it started read a span")
	}
	m = NewCPUMeter(true, FindPeers(strings.TrimSpace(string(comm)), "no-such-command"))
	m.Start()
	sum := sha256.Sum256(nil)
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		sum = sha256.Sum256(sum[:])
	}
	m.Stop()
	m.Stop()
	u, ok := m.Use()
	if !ok {
		t.Fatal("no CPU times read")
	}
	if !u.Profiled || u.Self.Transport <= 0 || u.Machine <= 0 {
		t.Errorf("use %+v: want a profile with the hashing in it, and busy cores", u)
	}
	if _, ok := u.Peers["no-such-command"]; ok || len(u.Peers) != 1 {
		t.Errorf("peers %v, want this process's command alone", u.Peers)
	}
}

// Rounds' uses add up, peers by command, and spread over their messages;
// the sum is profiled only when every part was.
func TestCPUUsePlusPer(t *testing.T) {
	const ms = time.Millisecond
	a := CPUUse{Machine: 40 * ms, Self: CPUSplit{Receiver: 4 * ms, Store: 8 * ms, Transport: 12 * ms, Runtime: 16 * ms}, Profiled: true,
		Peers: map[string]time.Duration{"redis-server": 20 * ms}}
	b := CPUUse{Machine: 60 * ms, Self: CPUSplit{Transport: 8 * ms}, Profiled: true,
		Peers: map[string]time.Duration{"redis-server": 20 * ms, "beam.smp": 4 * ms}}
	per := a.Plus(b).Per(4)
	want := CPUUse{Machine: 25 * ms, Self: CPUSplit{Receiver: ms, Store: 2 * ms, Transport: 5 * ms, Runtime: 4 * ms}, Profiled: true}
	if per.Machine != want.Machine || per.Self != want.Self || !per.Profiled ||
		len(per.Peers) != 2 || per.Peers["redis-server"] != 10*ms || per.Peers["beam.smp"] != ms {
		t.Errorf("(a + b) / 4 = %+v, want %+v and peers redis-server 10ms, beam.smp 1ms", per, want)
	}
	if b.Profiled = false; a.Plus(b).Profiled {
		t.Error("a sum with an unprofiled part is profiled")
	}
}
