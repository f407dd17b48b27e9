package bench

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// Deps are what a plan measures through.
type Deps struct {
	Env   *Env
	Tools Tools
}

// Plan is one run: the comparisons, the targets that judge them, the sweeps
// and the profiled workloads. Add a comparison by appending it to
// Comparisons and its targets to Targets in NewPlan; nothing else needs to
// know.
type Plan struct {
	Size        Size
	Params      Params
	Comparisons []Comparison
	Targets     []Target
	Sweeps      []Sweep
	Profiles    []Profiled
	ProfileSpan time.Duration
	// Notes run after the targets are judged and derive finding lines
	// from the report: what a measurement proves about a missed target,
	// such as the physical bound it runs into.
	Notes []Note
}

// Note derives finding lines from a finished report.
type Note func(ctx context.Context, rep *Report) ([]string, error)

// Names of the comparisons and sweeps NewPlan lists, for targets and
// reports that refer to them.
const (
	RouterMemory    = "router-memory"
	RedisCalls      = "redis-calls"
	RedisCallsOne   = "redis-calls-1"
	RedisServerCPU  = "redis-server-cpu"
	RouterRemote    = "router-remote"
	RedisRoundTrips = "redis-round-trips"
	PostgresCalls   = "postgres-calls"
	ReceiverAllocs  = "receiver-allocs"
	PayloadSweep    = "payload"
	CallersSweep    = "concurrency"
)

// The batched-claim targets: a store's claims/s, batched, against its
// reference's unbatched requests/s at the same concurrency.
const (
	RedisBatchedClaims    = "redis-batched-claims-vs-redis-benchmark"
	PostgresBatchedClaims = "postgres-batched-claims-vs-pgbench"
)

// Concurrency of the store-versus-reference comparisons, as the targets
// state them.
const (
	RedisCallers    = 50
	PostgresClients = 16
)

// NewPlan lists every comparison, target, sweep and profile of a run of
// size z.
func NewPlan(z Size, deps Deps) *Plan {
	p := z.Params()
	env, tools := deps.Env, deps.Tools
	plan := &Plan{Size: z, Params: p, ProfileSpan: 4 * p.Window}

	// First, while the server holds few keys: each round deletes its own,
	// and finds them by a scan of the whole key space.
	plan.Add(Comparison{Name: RedisServerCPU, Unit: "µs of server CPU/call", LowerIsBetter: true, Contenders: []Contender{
		{SetNXContender, ServerCPU(env, tools, p.Window/2, func(prefix string) []string {
			return []string{"SET", prefix + "__rand_int__", string(stores.NewToken()), "PX", "30000", "NX"}
		})},
		{"claim", ServerCPU(env, tools, p.Window/2, claimCommand)},
	}},
		Target{Name: "redis-claim-server-cpu-vs-set-nx", Of: "claim", Over: SetNXContender, Op: AtMost, Goal: 1.5},
	)

	plan.Add(Comparison{Name: RouterMemory, Unit: "msg/s", Rounds: p.RouterRounds, Contenders: []Contender{
		{"none", RouterRound(p.Messages, 64, NoMiddleware)},
		{"memory", RouterRound(p.Messages, 64, ReceiverOn(env, Memory))},
		{"deduplicator", RouterRound(p.Messages, 64, Deduplicator)},
		{FloorContender, RouterRound(p.Messages, 64, FloorOn(env, Memory))},
	}},
		Target{Name: "memory-vs-none", Of: "memory", Over: "none", Op: AtLeast, Goal: 0.9},
		Target{Name: "memory-vs-deduplicator", Of: "memory", Over: "deduplicator", Op: AtLeast, Goal: 1.0},
	)
	plan.Notes = append(plan.Notes, memoryBound)

	redisFill := &BatchFill{}
	plan.Add(Comparison{Name: RedisCalls, Unit: "calls/s", Contenders: []Contender{
		{"store", StoreCalls(env, Redis, RedisCallers, p.Window)},
		{"store-plain", StoreCalls(env, RedisPlain, RedisCallers, p.Window)},
		{"redis-benchmark", RedisBenchmark(env, tools, RedisCallers, p.Window)},
		{StoreClaimsContender, StoreClaims(env, Redis, RedisCallers, p.Window, redisFill)},
		{RedisBatchedContender, PipelinedClaims(env, tools, RedisCallers, p.Window)},
		{GoRedisPipelinedContender, GoRedisPipelined(env, RedisCallers, p.Window)},
	}},
		Target{Name: "redis-vs-redis-benchmark", Of: "store", Over: "redis-benchmark", Op: AtLeast, Goal: 0.8},
		Target{Name: RedisBatchedClaims, Of: StoreClaimsContender, Over: "redis-benchmark", Op: AtLeast, Goal: 1},
	)
	plan.Notes = append(plan.Notes, ceilingNote(RedisBatchedClaims, RedisBatchedContender, redisFill, RedisCallers, redisstore.DefaultBatchWorkers),
		batcherNote, postgresFloorNote)

	plan.Add(Comparison{Name: RedisCallsOne, Unit: "calls/s", Contenders: []Contender{
		{"store", StoreCalls(env, Redis, 1, p.Window)},
		{"redis-benchmark", RedisBenchmark(env, tools, 1, p.Window)},
	}})

	plan.Add(Comparison{Name: RouterRemote, Unit: "msg/s", Contenders: []Contender{
		{"none", RouterRound(p.RemoteMessages, 64, NoMiddleware)},
		{"redis", RouterRound(p.RemoteMessages, 64, ReceiverOn(env, Redis))},
		{"seed-redis", RouterRound(p.RemoteMessages, 64, Seed(env))},
		{"postgres", RouterRound(p.RemoteMessages, 64, ReceiverOn(env, Postgres))},
	}},
		Target{Name: "redis-receiver-vs-seed", Of: "redis", Over: "seed-redis", Op: AtLeast, Goal: 1.5},
	)

	plan.Add(Comparison{Name: RedisRoundTrips, Unit: "round trips/msg", LowerIsBetter: true,
		Contenders: []Contender{
			{"unique", RoundTrips(env, Redis, p.RemoteMessages/10, false)},
			{"duplicate-uncached", RoundTrips(env, RedisPlain, p.RemoteMessages/10, true)},
			{"duplicate", RoundTrips(env, Redis, p.RemoteMessages/10, true)},
		}},
		Target{Name: "redis-round-trips-unique", Of: "unique", Op: AtMost, Goal: 2},
		Target{Name: "redis-round-trips-duplicate-uncached", Of: "duplicate-uncached", Op: AtMost, Goal: 1},
		Target{Name: "redis-round-trips-duplicate-cached", Of: "duplicate", Op: AtMost, Goal: 0},
	)

	postgresFill := &BatchFill{}
	plan.Add(Comparison{Name: PostgresCalls, Unit: "calls/s", Contenders: []Contender{
		{"store", StoreCalls(env, Postgres, PostgresClients, p.Window)},
		{"store-plain", StoreCalls(env, PostgresPlain, PostgresClients, p.Window)},
		{"pgbench", Pgbench(env, tools, PostgresClients, p.Window)},
		{StoreClaimsContender, StoreClaims(env, Postgres, PostgresClients, p.Window, postgresFill)},
		{PgbenchBatchedContender, BatchedClaims(env, tools, PostgresClients, p.Window)},
		{PgbenchFloorContender, PgbenchFloor(env, tools, PostgresClients, p.Window)},
	}},
		Target{Name: "postgres-vs-pgbench", Of: "store", Over: "pgbench", Op: AtLeast, Goal: 0.8},
		Target{Name: PostgresBatchedClaims, Of: StoreClaimsContender, Over: "pgbench", Op: AtLeast, Goal: 2},
	)
	plan.Notes = append(plan.Notes, ceilingNote(PostgresBatchedClaims, PgbenchBatchedContender, postgresFill, PostgresClients, postgres.DefaultBatchWorkers))

	plan.Add(Comparison{Name: ReceiverAllocs, Unit: "allocs/msg", LowerIsBetter: true, Contenders: []Contender{
		{"none", RouterAllocs(p.Messages, 64, NoMiddleware)},
		{"memory", RouterAllocs(p.Messages, 64, ReceiverOn(env, Memory))},
	}},
		Target{Name: "receiver-allocs", Of: "memory", Over: "none", Minus: true, Op: AtMost, Goal: 10},
	)

	// A cell of the store sweeps is one window per repeat; two at full
	// size leave room in the run's twelve minutes for the flows'
	// comparisons and sweep.
	repeats := 1
	if z == Full {
		repeats = 2
	}
	plan.Sweeps = []Sweep{
		{Name: PayloadSweep, Axis: "payload bytes", Unit: "msg/s", Values: p.Payloads, Backends: Backends, Repeats: repeats,
			Measure: func(b Backend, size int) func(ctx context.Context) (float64, error) {
				return ReceiverCalls(env, b, 16, size, p.SweepWindow)
			}},
		{Name: CallersSweep, Axis: "callers", Unit: "msg/s", Values: p.Callers, Backends: Backends, Repeats: repeats,
			Plot: "receiver throughput by concurrency, per store",
			Measure: func(b Backend, callers int) func(ctx context.Context) (float64, error) {
				return ReceiverCalls(env, b, callers, 64, p.SweepWindow)
			}},
	}

	plan.Profiles = []Profiled{
		{Name: "GoChannel router, memory-store receiver", Round: RouterRound(p.Messages, 64, ReceiverOn(env, Memory))},
	}
	return plan
}

// Add appends c and its targets, which name c as their comparison. Packages
// that measure through this one (and so cannot be imported by NewPlan) add
// their comparisons to a plan this way.
func (p *Plan) Add(c Comparison, targets ...Target) {
	p.Comparisons = append(p.Comparisons, c)
	for _, t := range targets {
		t.Comparison = c.Name
		p.Targets = append(p.Targets, t)
	}
}
