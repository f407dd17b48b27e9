package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/internal/batch"
)

// Defaults of the batching settings, applied to zero settings; all but the
// batch size (the service's STORE_BATCH_SIZE default) apply when the batch
// size is 2 or more. Each statement pays a commit, so fewer,
// fuller statements go further: two in flight, a worker lets its queue
// refill for a moment before the next, and a call waits for a worker
// unless a statement ahead of it is stuck (on a row an open transaction
// holds, say) for longer than a batched statement takes under load.
const (
	DefaultBatchSize    = 64
	DefaultBatchWorkers = 2
	DefaultBatchTimeout = 5 * time.Millisecond
	DefaultBatchLinger  = 200 * time.Microsecond
)

// completeBatchSQL completes many distinct keys in one statement: the
// rows to complete are locked first, in key order (as pgclaim.BatchSQL
// locks them), then updated as completeSQL does. It returns the keys it
// completed, or found completed already with the same token and result.
const completeBatchSQL = `
WITH u AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[]) AS u(key, token, result, ttl)
), locked AS (
	SELECT r.key FROM %[1]s AS r JOIN u ON r.key = u.key
	WHERE r.token = u.token AND r.expires_at > now()
		AND (r.state = 'in_progress' OR coalesce(r.result, '') = coalesce(u.result, ''))
	ORDER BY r.key
	FOR UPDATE OF r
)
UPDATE %[1]s AS r SET
	state        = 'completed',
	result       = CASE WHEN r.state = 'in_progress' THEN u.result ELSE r.result END,
	completed_at = CASE WHEN r.state = 'in_progress' THEN now() ELSE r.completed_at END,
	expires_at   = CASE WHEN r.state = 'in_progress' THEN now() + u.ttl * interval '1 microsecond' ELSE r.expires_at END
FROM u JOIN locked ON locked.key = u.key
WHERE r.key = u.key AND r.token = u.token AND r.expires_at > now()
	AND (r.state = 'in_progress' OR coalesce(r.result, '') = coalesce(u.result, ''))
RETURNING r.key`

// batchers coalesce concurrent Claims and Completes (see Config.BatchSize).
type batchers struct {
	claim    *batch.Batcher[claimReq, stores.Claim]
	complete *batch.Batcher[completeReq, struct{}]
}

func newBatchers(s *Store, bc batch.Config, observe func(op string, calls int)) *batchers {
	return &batchers{
		claim:    batch.New(batch.Observed(s.claimBatch, "claim", observe), bc),
		complete: batch.New(batch.Observed(s.completeBatch, "complete", observe), bc),
	}
}

// claimBatch claims reqs: a batch of one with pgclaim.SQL, as an unbatched
// Claim does, a larger one with pgclaim.BatchSQL per round of distinct keys.
func (s *Store) claimBatch(ctx context.Context, reqs []claimReq, res []batch.Result[stores.Claim]) {
	if len(reqs) == 1 {
		res[0].Resp, res[0].Err = s.claimOne(ctx, reqs[0])
		return
	}
	for _, round := range rounds(reqs, func(r claimReq) string { return r.key }) {
		if len(round) == 1 {
			i := round[0]
			res[i].Resp, res[i].Err = s.claimOne(ctx, reqs[i])
			continue
		}
		s.claimMany(ctx, reqs, round, res)
	}
}

func (s *Store) claimMany(ctx context.Context, reqs []claimReq, round []int, res []batch.Result[stores.Claim]) {
	keys, tokens := make([]string, len(round)), make([]string, len(round))
	fps, leases := make([][]byte, len(round)), make([]int64, len(round))
	at := make(map[string]int, len(round))
	for j, i := range round {
		r := reqs[i]
		keys[j], tokens[j], fps[j], leases[j] = r.key, string(r.token), r.fingerprint, r.lease
		at[r.key] = i
	}
	var (
		rows pgx.Rows
		br   pgx.BatchResults
		err  error
	)
	if s.partitioned {
		if br, err = s.sendLocked(ctx, s.pool, s.sql.lockBatch, keys, s.sql.claimBatch, keys, tokens, fps, leases); err == nil {
			rows, err = br.Query()
		}
	} else {
		rows, err = s.pool.Query(ctx, s.sql.claimBatch, keys, tokens, fps, leases)
	}
	if err == nil {
		var row claimRow
		var key string
		_, err = pgx.ForEachRow(rows, []any{&key, &row.token, &row.state, &row.rec.Fingerprint, &row.rec.Result,
			&row.rec.CreatedAt, &row.completedAt, &row.expiresAt}, func() error {
			i, ok := at[key]
			if !ok {
				return fmt.Errorf("batched claim returned key %q, which it was not given", key)
			}
			delete(at, key)
			res[i].Resp = row.claim(reqs[i].token)
			row = claimRow{}
			return nil
		})
	}
	if br != nil {
		err = errors.Join(err, br.Close())
	}
	if err == nil && len(at) > 0 {
		err = fmt.Errorf("batched claim returned no row for %d of %d keys", len(at), len(round))
	}
	if err != nil {
		err = translate(ctx, "claim", err)
		for _, i := range round {
			res[i] = batch.Result[stores.Claim]{Err: err}
		}
	}
}

// completeBatch completes reqs: a batch of one with completeSQL, a larger
// one with completeBatchSQL per round of distinct keys.
func (s *Store) completeBatch(ctx context.Context, reqs []completeReq, res []batch.Result[struct{}]) {
	if len(reqs) == 1 {
		res[0].Err = s.completeOne(ctx, reqs[0])
		return
	}
	for _, round := range rounds(reqs, func(r completeReq) string { return r.key }) {
		if len(round) == 1 {
			i := round[0]
			res[i].Err = s.completeOne(ctx, reqs[i])
			continue
		}
		s.completeMany(ctx, reqs, round, res)
	}
}

func (s *Store) completeMany(ctx context.Context, reqs []completeReq, round []int, res []batch.Result[struct{}]) {
	keys, tokens := make([]string, len(round)), make([]string, len(round))
	results, ttls := make([][]byte, len(round)), make([]int64, len(round))
	for j, i := range round {
		r := reqs[i]
		keys[j], tokens[j], results[j], ttls[j] = r.key, string(r.token), r.result, r.ttl
	}
	rows, err := s.pool.Query(ctx, s.sql.completeBatch, keys, tokens, results, ttls)
	done := make(map[string]bool, len(round))
	if err == nil {
		var key string
		_, err = pgx.ForEachRow(rows, []any{&key}, func() error {
			done[key] = true
			return nil
		})
	}
	for _, i := range round {
		switch {
		case err != nil:
			res[i].Err = translate(ctx, "complete", err)
		case !done[reqs[i].key]:
			res[i].Err = stores.ErrLeaseLost
		}
	}
}

// rounds splits the indexes of reqs into rounds in which no key appears
// twice, keeping the order of each key's calls: round n holds every key's
// n-th call. Running the rounds one after the other gives duplicates of a
// key the outcomes of sequential calls.
func rounds[R any](reqs []R, key func(R) string) [][]int {
	seen := make(map[string]int, len(reqs))
	var out [][]int
	for i, r := range reqs {
		n := seen[key(r)]
		seen[key(r)] = n + 1
		if n == len(out) {
			out = append(out, make([]int, 0, len(reqs)))
		}
		out[n] = append(out[n], i)
	}
	return out
}
