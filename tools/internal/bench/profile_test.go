package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// Prepare runs once, before the rounds; a CPUOnly workload gets the CPU
// profile's finding alone.
func TestProfileWorkloadPreparesAndTakesTheCPUProfileAlone(t *testing.T) {
	var prepared, rounds int
	w := Profiled{
		Name:    "hashing",
		Prepare: func(context.Context) error { prepared++; return nil },
		Round: func(context.Context) (float64, error) {
			if prepared != 1 {
				t.Errorf("a round ran with Prepare run %d times", prepared)
			}
			rounds++
			sum := sha256.Sum256(nil)
			for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
				sum = sha256.Sum256(sum[:])
			}
			return 1, nil
		},
		CPUOnly: true,
	}
	fs, err := ProfileWorkload(t.Context(), w, 100*time.Millisecond, 3)
	if err != nil {
		t.Fatal(err)
	}
	if prepared != 1 || rounds == 0 {
		t.Errorf("prepared %d times, %d rounds", prepared, rounds)
	}
	if len(fs) != 1 || fs[0].Profile != "cpu" || fs[0].Workload != "hashing" || len(fs[0].Top) == 0 {
		t.Errorf("findings %+v, want the CPU profile's alone", fs)
	}
}

// stack is a sample of cpu on frames, leaf first; a frame "f|g" is a call
// of f inlined into g.
type stack struct {
	cpu    time.Duration
	frames []string
}

// cpuProfile encodes a CPU profile of one sample per stack.
func cpuProfile(t *testing.T, stacks []stack) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: int64(10 * time.Millisecond),
	}
	functions := map[string]*profile.Function{}
	for _, st := range stacks {
		s := &profile.Sample{Value: []int64{int64(st.cpu / (10 * time.Millisecond)), int64(st.cpu)}}
		for _, frame := range st.frames {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1)}
			for name := range strings.SplitSeq(frame, "|") {
				fn := functions[name]
				if fn == nil {
					fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
					functions[name] = fn
					p.Function = append(p.Function, fn)
				}
				loc.Line = append(loc.Line, profile.Line{Function: fn})
			}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The innermost frame of the receiver, a store or Watermill decides a
// sample's bucket; go-redis is the store client's unless Watermill's
// code called it; stacks of the runtime alone are the runtime's.
func TestSplitCPUProfile(t *testing.T) {
	const ms = time.Millisecond
	const (
		receiver = "github.com/onceflow/onceflow/middleware/consume.(*messageHandler).handle"
		router   = "github.com/ThreeDotsLabs/watermill/message.(*Router).run"
		client   = "github.com/redis/go-redis/v9.(*Client).Process"
	)
	data := cpuProfile(t, []stack{
		{10 * ms, []string{"crypto/sha256.block", receiver, router, "runtime.goexit"}},
		{2 * ms, []string{"runtime.gcAssistAlloc", "runtime.mallocgc", receiver, router, "runtime.goexit"}},
		{20 * ms, []string{"syscall.Syscall", client, "github.com/onceflow/onceflow/stores/redis.(*Store).Claim", receiver, router}},
		{4 * ms, []string{"github.com/onceflow/onceflow/stores/cache.(*Store).get|" + receiver, router}}, // inlined into the receiver
		{ms, []string{"github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper", "runtime.goexit"}},
		{5 * ms, []string{"syscall.Syscall", client, "github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream.(*Subscriber).read"}},
		{3 * ms, []string{"github.com/twmb/franz-go/pkg/kfake.(*Cluster).run", "runtime.goexit"}},
		{7 * ms, []string{"runtime.scanobject", "runtime.gcBgMarkWorker", "runtime.goexit"}},
		{ms, []string{"internal/runtime/syscall.Syscall6", "runtime/pprof.profileWriter", "runtime.goexit"}},
	})
	got, err := SplitCPUProfile(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (CPUSplit{Receiver: 12 * ms, Store: 25 * ms, Transport: 8 * ms, Runtime: 8 * ms}); got != want || got.Total() != 53*ms {
		t.Errorf("SplitCPUProfile = %+v, want %+v", got, want)
	}
	if _, err := SplitCPUProfile([]byte("not a profile")); err == nil {
		t.Error("a broken profile was split")
	}
}
