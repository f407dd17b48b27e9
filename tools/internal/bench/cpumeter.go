package bench

import (
	"bytes"
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

// CPUUse is the CPU time a span cost, by who spent it.
type CPUUse struct {
	// Machine is the busy time of the machine's cores, all of them.
	Machine time.Duration
	// Self is this process's, by the buckets of its CPU profile; zero
	// when the span was not profiled.
	Self     CPUSplit
	Profiled bool
	// Peers is the time of each other program watched, by command, its
	// processes summed; a command no process had is absent.
	Peers map[string]time.Duration
}

// CPUMeter reads what a span costs in CPU: the machine's times (see
// [CPUTimes]), and, when asked, this process's CPU profile and the CPU
// times of other programs' processes. Start and Stop may be called from
// any goroutine; the first of each counts, and a Stop before any Start
// ends the meter with nothing read.
type CPUMeter struct {
	profile bool
	peers   map[string][]int

	mu             sync.Mutex
	started, ended bool
	first, last    CPUTimes
	read           bool // both readings of the machine's times succeeded
	before, after  map[string]map[int]uint64
	profiling      bool
	prof           bytes.Buffer
}

// FindPeers returns the main processes of the programs whose commands are
// comms (see [FindProcesses]), by command, leaving out the commands no
// process has.
func FindPeers(comms ...string) map[string][]int {
	peers := map[string][]int{}
	for _, comm := range comms {
		if comm == "" {
			continue
		}
		if pids := FindProcesses(comm); len(pids) > 0 {
			peers[comm] = pids
		}
	}
	return peers
}

// NewCPUMeter returns a meter that, with profile, takes this process's
// CPU profile over the span and reads the CPU times of peers (see
// [FindPeers]): each main process with its children, so that a child
// started during the span counts whole, and one that ends during it not
// at all.
func NewCPUMeter(profile bool, peers map[string][]int) *CPUMeter {
	return &CPUMeter{profile: profile, peers: peers}
}

// Start begins the span.
func (m *CPUMeter) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.ended {
		return
	}
	m.started = true
	m.first, m.read = ReadCPU()
	m.before = m.readPeers()
	// Another profile running (a test's -cpuprofile, say) leaves the span
	// unprofiled.
	m.profiling = m.profile && pprof.StartCPUProfile(&m.prof) == nil
}

// Stop ends the span.
func (m *CPUMeter) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return
	}
	m.ended = true
	if !m.started {
		return
	}
	var ok bool
	m.last, ok = ReadCPU()
	m.read = m.read && ok
	m.after = m.readPeers()
	if m.profiling {
		pprof.StopCPUProfile()
	}
}

func (m *CPUMeter) readPeers() map[string]map[int]uint64 {
	ticks := make(map[string]map[int]uint64, len(m.peers))
	for comm, pids := range m.peers {
		ticks[comm] = processTicks(os.DirFS("/proc"), pids)
	}
	return ticks
}

// Times returns the machine's times at Start and at Stop, and false when
// either could not be read.
func (m *CPUMeter) Times() (first, last CPUTimes, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first, m.last, m.started && m.ended && m.read
}

// Use returns what the span cost once Stop has returned, and false when
// the machine's times could not be read. A profile that cannot be parsed
// leaves Self zero.
func (m *CPUMeter) Use() (CPUUse, bool) {
	first, last, ok := m.Times()
	if !ok || last.Busy < first.Busy {
		return CPUUse{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := CPUUse{Machine: time.Duration(last.Busy-first.Busy) * ClockTick, Peers: map[string]time.Duration{}}
	for comm := range m.peers {
		u.Peers[comm] = time.Duration(ticksBetween(m.before[comm], m.after[comm])) * ClockTick
	}
	if m.profiling {
		split, err := SplitCPUProfile(m.prof.Bytes())
		u.Self, u.Profiled = split, err == nil
	}
	return u, true
}

// Plus is u and v together; Profiled only when both were.
func (u CPUUse) Plus(v CPUUse) CPUUse {
	sum := CPUUse{Machine: u.Machine + v.Machine, Self: u.Self.plus(v.Self), Profiled: u.Profiled && v.Profiled,
		Peers: map[string]time.Duration{}}
	for _, peers := range []map[string]time.Duration{u.Peers, v.Peers} {
		for comm, d := range peers {
			sum.Peers[comm] += d
		}
	}
	return sum
}

// Per is u spread over n: per message, say.
func (u CPUUse) Per(n int) CPUUse {
	per := CPUUse{Machine: u.Machine / time.Duration(n), Self: u.Self.over(n), Profiled: u.Profiled,
		Peers: make(map[string]time.Duration, len(u.Peers))}
	for comm, d := range u.Peers {
		per.Peers[comm] = d / time.Duration(n)
	}
	return per
}

func (s CPUSplit) plus(t CPUSplit) CPUSplit {
	return CPUSplit{Receiver: s.Receiver + t.Receiver, Store: s.Store + t.Store, Transport: s.Transport + t.Transport, Runtime: s.Runtime + t.Runtime}
}

func (s CPUSplit) over(n int) CPUSplit {
	d := time.Duration(n)
	return CPUSplit{Receiver: s.Receiver / d, Store: s.Store / d, Transport: s.Transport / d, Runtime: s.Runtime / d}
}
