package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Profiled is a workload the run profiles for its findings.
type Profiled struct {
	Name string
	// Round runs the workload once; it is repeated for the profile's span.
	Round func(ctx context.Context) (float64, error)
	// Prepare, when set, runs once before the profiles start, outside
	// them: it starts what the rounds run on (a service, say).
	Prepare func(ctx context.Context) error
	// CPUOnly takes the CPU profile alone, not the allocation profile.
	CPUOnly bool
}

// Finding is one line of the findings: the functions that take the largest
// flat share of one profile of one workload.
type Finding struct {
	Workload string
	Profile  string // "cpu" or "alloc_objects"
	Top      []Share
	// Own is the share of samples with the receiver's or a store's code
	// (OwnPrefixes) anywhere on their stack: what they account for, callees
	// included.
	Own float64
}

// OwnPrefixes are the prefixes of the receiver's and the stores' function
// names.
var OwnPrefixes = []string{receiverPrefix, storePrefix}

// CPUSplit is a process's CPU time by what spent it, from its CPU profile
// (see [SplitCPUProfile]).
type CPUSplit struct {
	// Receiver is the idempotent receiver's code: its core and faces
	// (the packages under middleware/).
	Receiver time.Duration
	// Store is the record store's code and its client's: onceflow's
	// stores and go-redis.
	Store time.Duration
	// Transport is the rest of the code: the transport's, its broker's
	// when it runs in process, the routers' and the handler's.
	Transport time.Duration
	// Runtime is the time of stacks with nothing but the runtime's frames:
	// the garbage collector's workers, the scheduler, the profiler.
	Runtime time.Duration
}

// Total is the process's CPU time, every bucket's.
func (s CPUSplit) Total() time.Duration { return s.Receiver + s.Store + s.Transport + s.Runtime }

// The prefixes of the function names SplitCPUProfile buckets by.
const (
	receiverPrefix  = "github.com/onceflow/onceflow/middleware/"
	storePrefix     = "github.com/onceflow/onceflow/stores"
	redisPrefix     = "github.com/redis/go-redis"
	watermillPrefix = "github.com/ThreeDotsLabs/watermill"
)

// SplitCPUProfile sums the CPU time of a CPU profile's samples by bucket.
// The innermost frame of the receiver, of a store or of Watermill on a
// sample's stack decides its bucket: receiver, store or transport, so a
// store's call on behalf of the receiver is the store's, and the
// receiver's own work (and the garbage it makes the collector assist
// with) the receiver's. A go-redis frame without one of them is the
// store client's; under Watermill's it is the redisstream transport's
// client. A stack of the runtime's frames alone is the runtime's; any
// other, the transport's.
func SplitCPUProfile(data []byte) (CPUSplit, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return CPUSplit{}, fmt.Errorf("parsing the cpu profile: %w", err)
	}
	idx := slices.IndexFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == "cpu" })
	if idx < 0 {
		return CPUSplit{}, errors.New("profile has no cpu samples")
	}
	var split CPUSplit
	for _, s := range p.Sample {
		*split.bucket(s) += time.Duration(s.Value[idx])
	}
	return split, nil
}

// bucket is the field of s that sample counts in (see SplitCPUProfile).
func (s *CPUSplit) bucket(sample *profile.Sample) *time.Duration {
	redis, runtimeOnly := false, true
	for _, loc := range sample.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			switch fn := line.Function.Name; {
			case strings.HasPrefix(fn, receiverPrefix):
				return &s.Receiver
			case strings.HasPrefix(fn, storePrefix):
				return &s.Store
			case strings.HasPrefix(fn, watermillPrefix):
				return &s.Transport
			case strings.HasPrefix(fn, redisPrefix):
				redis = true
			case !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "runtime/") && !strings.HasPrefix(fn, "internal/runtime/"):
				runtimeOnly = false
			}
		}
	}
	switch {
	case redis:
		return &s.Store
	case runtimeOnly:
		return &s.Runtime
	}
	return &s.Transport
}

// Share is one function's flat share of a profile.
type Share struct {
	Function string
	Percent  float64
}

// String is the finding as a sentence.
func (f Finding) String() string {
	parts := make([]string, len(f.Top))
	for i, s := range f.Top {
		parts[i] = fmt.Sprintf("%s %.1f%%", s.Function, s.Percent)
	}
	return fmt.Sprintf("%s, %s profile: receiver and store code on the stack of %.1f%% of samples; top functions by flat share: %s",
		f.Workload, f.Profile, f.Own, strings.Join(parts, ", "))
}

// ProfileWorkload runs w's rounds for span under the CPU profiler and,
// unless w is CPUOnly, for span again under a fine allocation profile,
// and returns the top functions of each.
func ProfileWorkload(ctx context.Context, w Profiled, span time.Duration, top int) ([]Finding, error) {
	if w.Prepare != nil {
		if err := w.Prepare(ctx); err != nil {
			return nil, err
		}
	}
	var cpu bytes.Buffer
	if err := pprof.StartCPUProfile(&cpu); err != nil {
		return nil, fmt.Errorf("starting the cpu profile: %w", err)
	}
	err := repeat(ctx, w.Round, span)
	pprof.StopCPUProfile()
	if err != nil {
		return nil, err
	}
	cpuTop, cpuOwn, err := topFlat(cpu.Bytes(), nil, "cpu", top)
	if err != nil {
		return nil, err
	}
	cpuFinding := Finding{Workload: w.Name, Profile: "cpu", Top: cpuTop, Own: cpuOwn}
	if w.CPUOnly {
		return []Finding{cpuFinding}, nil
	}

	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 512
	defer func() { runtime.MemProfileRate = rate }()
	before, err := heapProfile()
	if err != nil {
		return nil, err
	}
	if err := repeat(ctx, w.Round, span); err != nil {
		return nil, err
	}
	after, err := heapProfile()
	if err != nil {
		return nil, err
	}
	allocTop, allocOwn, err := topFlat(after, before, "alloc_objects", top)
	if err != nil {
		return nil, err
	}
	return []Finding{cpuFinding, {Workload: w.Name, Profile: "alloc_objects", Top: allocTop, Own: allocOwn}}, nil
}

func repeat(ctx context.Context, round func(context.Context) (float64, error), span time.Duration) error {
	for start := time.Now(); time.Since(start) < span; {
		if _, err := round(ctx); err != nil {
			return err
		}
	}
	return nil
}

func heapProfile() ([]byte, error) {
	runtime.GC() // the heap profile reports as of the last GC
	var b bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&b, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// topFlat returns the n functions with the largest flat share of sample
// type typ in profile data, less base when given (a profile of the same
// kind taken earlier), and the share of samples with OwnPrefixes on the
// stack.
func topFlat(data, base []byte, typ string, n int) ([]Share, float64, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("parsing the %s profile: %w", typ, err)
	}
	if base != nil {
		b, err := profile.Parse(bytes.NewReader(base))
		if err != nil {
			return nil, 0, fmt.Errorf("parsing the %s profile: %w", typ, err)
		}
		b.Scale(-1)
		if p, err = profile.Merge([]*profile.Profile{p, b}); err != nil {
			return nil, 0, fmt.Errorf("subtracting %s profiles: %w", typ, err)
		}
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == typ {
			idx = i
		}
	}
	if idx < 0 {
		return nil, 0, fmt.Errorf("profile has no %s samples", typ)
	}
	flat := map[string]int64{}
	var total, own int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		if onStack(s, OwnPrefixes) {
			own += v
		}
		if len(s.Location) == 0 || len(s.Location[0].Line) == 0 {
			continue
		}
		// The leaf's innermost inlined function holds the flat value.
		flat[s.Location[0].Line[0].Function.Name] += v
	}
	if total <= 0 {
		return nil, 0, fmt.Errorf("%s profile is empty", typ)
	}
	shares := make([]Share, 0, len(flat))
	for fn, v := range flat {
		shares = append(shares, Share{Function: fn, Percent: 100 * float64(v) / float64(total)})
	}
	slices.SortFunc(shares, func(a, b Share) int {
		if a.Percent != b.Percent {
			if a.Percent > b.Percent {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Function, b.Function)
	})
	return shares[:min(n, len(shares))], 100 * float64(own) / float64(total), nil
}

// onStack reports whether a function named with one of prefixes is on s's
// stack.
func onStack(s *profile.Sample, prefixes []string) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			for _, p := range prefixes {
				if line.Function != nil && strings.HasPrefix(line.Function.Name, p) {
					return true
				}
			}
		}
	}
	return false
}
