package linearizable

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/onceflow/onceflow/stores"
)

// verdict is the result of checking a history.
type verdict struct {
	result porcupine.CheckResult
	info   porcupine.LinearizationInfo
	model  porcupine.Model
	// reused names a token that two acquisitions returned, which no
	// ordering can excuse: tokens are unique across acquisitions.
	reused stores.Token
	took   time.Duration
}

// check checks h against the store model with cfg's tolerance, within
// cfg.CheckTimeout.
func check(h *history, cfg Config) verdict {
	begin := time.Now()
	v := verdict{model: model{tol: int64(cfg.Tolerance), clockBeforeEffect: cfg.ClockBeforeEffect}.porcupine()}
	v.reused = reusedToken(h.ops)
	v.result, v.info = porcupine.CheckOperationsVerbose(v.model, h.ops, cfg.CheckTimeout)
	if v.reused != "" {
		v.result = porcupine.Illegal
	}
	v.took = time.Since(begin)
	return v
}

// reusedToken returns a token that more than one Claim acquired with, if
// any, across all keys.
func reusedToken(ops []porcupine.Operation) stores.Token {
	seen := map[stores.Token]bool{}
	for _, op := range ops {
		in, out := op.Input.(input), op.Output.(output)
		if in.kind != claimCall || out.outcome != succeeded || out.status != stores.Acquired {
			continue
		}
		if seen[out.token] {
			return out.token
		}
		seen[out.token] = true
	}
	return ""
}

// visualise writes porcupine's HTML visualisation of v, with h's faults
// marked, to a file in dir named after name, and returns its path.
func visualise(h *history, v verdict, dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var notes []porcupine.Annotation
	for _, f := range h.faults {
		notes = append(notes, porcupine.Annotation{
			Tag: "fault", Start: f.start, End: f.end, Description: f.name, BackgroundColor: "#f8d7da",
		})
	}
	v.info.AddAnnotations(notes)
	file := fmt.Sprintf("%s-%s.html", unsafeChars.ReplaceAllString(name, "_"), time.Now().Format("20060102-150405.000"))
	path := filepath.Join(dir, file)
	if err := porcupine.VisualizePath(v.model, v.info, path); err != nil {
		return "", fmt.Errorf("writing the visualisation to %s: %w", path, err)
	}
	return path, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// explain describes, for the log, where each key's history stops fitting
// the model: the longest order of its calls found, the state after it, and
// the earliest calls it could not add.
func explain(h *history, v verdict) string {
	var b strings.Builder
	parts := partitionByKey(h.ops)
	for p, partials := range v.info.PartialLinearizationsOperations() {
		if p >= len(parts) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(parts[p]) {
			continue
		}
		type id struct {
			client int
			call   int64
		}
		var s any = v.model.Init()
		placed := map[id]bool{}
		for _, op := range longest {
			_, s = v.model.Step(s, op.Input, op.Output)
			placed[id{op.ClientId, op.Call}] = true
		}
		fmt.Fprintf(&b, "key %s: %d of %d calls fit, ending in state: %s\n", parts[p][0].Input.(input).key,
			len(longest), len(parts[p]), v.model.DescribeState(s))
		if n := len(longest); n > 0 {
			last := longest[max(0, n-3):]
			for _, op := range last {
				fmt.Fprintf(&b, "  placed   c%d [%s, %s] %s\n", op.ClientId, at(op.Call), at(op.Return), v.model.DescribeOperation(op.Input, op.Output))
			}
		}
		rest := slices.Clone(parts[p])
		slices.SortFunc(rest, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		shown := 0
		for _, op := range rest {
			if placed[id{op.ClientId, op.Call}] || shown == 5 {
				continue
			}
			shown++
			fmt.Fprintf(&b, "  unplaced c%d [%s, %s] %s\n", op.ClientId, at(op.Call), at(op.Return), v.model.DescribeOperation(op.Input, op.Output))
		}
	}
	return b.String()
}
