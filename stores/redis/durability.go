package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A Redis that forgets a completed record turns every later duplicate of its
// message into a second effect. Inspect reads the server settings that decide
// whether it can.

// State is the verdict on one setting.
type State string

// The verdicts Inspect gives.
const (
	// OK: the setting keeps records.
	OK State = "ok"
	// AtRisk: the setting lets the server forget records.
	AtRisk State = "at_risk"
	// Unknown: the setting could not be read, as on managed services that
	// disable or rename CONFIG or deny it by ACL.
	Unknown State = "unknown"
)

// The settings Inspect judges, named as Redis names them.
const (
	// SettingAppendOnly is persistence: appendonly, judged together with
	// save (RDB snapshots).
	SettingAppendOnly = "appendonly"
	// SettingMaxmemoryPolicy is eviction under memory pressure.
	SettingMaxmemoryPolicy = "maxmemory-policy"
)

// Verdict is what Inspect found for one setting.
type Verdict struct {
	// Setting is SettingAppendOnly or SettingMaxmemoryPolicy.
	Setting string
	// State is the verdict.
	State State
	// Value is what the server reported, e.g. `appendonly=no and save=""`;
	// for Unknown, why it could not be read.
	Value string
	// Consequence says, for AtRisk, how records get lost.
	Consequence string
	// Fix is the setting that makes an AtRisk verdict OK.
	Fix string
	// Node is the Cluster master the verdict comes from (the first, by
	// address, of those with the worst verdict); empty for a single node.
	Node string
}

// phrase is the verdict as it appears in a log line.
func (v Verdict) phrase() string {
	s := v.Value
	if v.Node != "" {
		s += " on " + v.Node
	}
	if v.Consequence != "" {
		s += " (" + v.Consequence + ")"
	}
	return s
}

// Durability is the verdict on each setting that decides whether the server
// can forget records.
type Durability struct {
	// AppendOnly judges persistence: appendonly yes keeps every record
	// across a restart (up to the last second with appendfsync everysec, if
	// the machine itself fails); RDB snapshots alone (appendonly no, save
	// set) lose the records written since the last snapshot; neither loses
	// them all.
	AppendOnly Verdict
	// MaxmemoryPolicy judges eviction: any policy but noeviction evicts
	// records under memory pressure. The volatile-* policies evict them too,
	// since every record has a TTL.
	MaxmemoryPolicy Verdict
}

// Verdicts returns the verdicts in a fixed order.
func (d Durability) Verdicts() []Verdict { return []Verdict{d.AppendOnly, d.MaxmemoryPolicy} }

// Warning returns one line naming every setting that lets the server forget
// records, what follows and how to fix it; "" when none does.
func (d Durability) Warning() string {
	if found := d.forgetful(); found != "" {
		return ErrForgetful.Error() + ": " + found
	}
	return ""
}

// forgetful names every setting that lets the server forget records, what
// follows and how to fix it; "" when none does.
func (d Durability) forgetful() string {
	var found, fixes []string
	for _, v := range d.Verdicts() {
		if v.State == AtRisk {
			found = append(found, v.phrase())
			fixes = append(fixes, v.Fix)
		}
	}
	if len(found) == 0 {
		return ""
	}
	return strings.Join(found, "; ") + "; set " + strings.Join(fixes, " and ")
}

// ErrForgetful means the Redis server can forget records: see
// [RequireDurable].
var ErrForgetful = errors.New("redis records can be forgotten")

// RequireDurable inspects the server behind client (see [Inspect]) and
// returns an error matching [ErrForgetful], with what Warning says, when
// a setting lets it forget records: a program that must not start on
// such a server returns it. A setting that cannot be read refuses
// nothing (see Unchecked); a server that cannot be reached is an error.
func RequireDurable(ctx context.Context, client redis.UniversalClient) error {
	d, err := Inspect(ctx, client)
	if err != nil {
		return err
	}
	return d.Err()
}

// Err is Warning as an error matching [ErrForgetful]; nil when no
// setting lets the server forget records.
func (d Durability) Err() error {
	if found := d.forgetful(); found != "" {
		return fmt.Errorf("%w: %s", ErrForgetful, found)
	}
	return nil
}

// Unchecked returns one line naming every setting that could not be read
// and why the first could not; "" when all were read.
func (d Durability) Unchecked() string {
	var settings []string
	var why string
	for _, v := range d.Verdicts() {
		if v.State == Unknown {
			settings = append(settings, v.Setting)
			why = cmp.Or(why, v.phrase())
		}
	}
	if len(settings) == 0 {
		return ""
	}
	return "could not check whether redis can forget records (" + strings.Join(settings, ", ") + "): " + why +
		"; make sure it runs with appendonly yes and maxmemory-policy noeviction"
}

// Inspect reads the persistence and eviction settings of the server behind
// client — of every master, on a Cluster — with CONFIG GET, and judges
// them. A server that refuses CONFIG (renamed, disabled, or denied by ACL)
// gives Unknown verdicts, not an error; an error means the server could not
// be reached. On a Cluster each verdict is the worst among the masters.
func Inspect(ctx context.Context, client redis.UniversalClient) (Durability, error) {
	if _, ok := client.(*redis.ClusterClient); !ok {
		return inspectNode(ctx, client, "")
	}
	var (
		mu    sync.Mutex
		nodes []Durability
	)
	err := eachServer(ctx, client, func(ctx context.Context, n redis.Cmdable, node string) error {
		d, err := inspectNode(ctx, n, node)
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, d)
		return err
	})
	if err == nil && len(nodes) == 0 {
		err = errors.New("no masters")
	}
	if err != nil {
		return Durability{}, fmt.Errorf("inspecting the Redis Cluster: %w", err)
	}
	return worst(nodes), nil
}

// eachServer runs fn on the server behind client, or, on a Cluster, on
// every master at once, fn told its address ("" for a single node). It
// returns the first error.
func eachServer(ctx context.Context, client redis.UniversalClient, fn func(ctx context.Context, c redis.Cmdable, node string) error) error {
	cluster, ok := client.(*redis.ClusterClient)
	if !ok {
		return fn(ctx, client, "")
	}
	return cluster.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return fn(ctx, n, n.Options().Addr)
	})
}

// inspectNode judges one server; node names it in verdicts ("" for a single
// node).
func inspectNode(ctx context.Context, c redis.Cmdable, node string) (Durability, error) {
	var values [3]string
	var reasons []string
	for i, name := range []string{"appendonly", "save", "maxmemory-policy"} {
		v, reason, err := configGet(ctx, c, name)
		if err != nil {
			return Durability{}, fmt.Errorf("reading %s of %s: %w", name, cmp.Or(node, "Redis"), err)
		}
		values[i] = v
		reasons = append(reasons, reason)
	}
	d := Durability{
		AppendOnly:      judgeAppendOnly(values[0], values[1], cmp.Or(reasons[0], reasons[1])),
		MaxmemoryPolicy: judgeMaxmemoryPolicy(values[2], reasons[2]),
	}
	d.AppendOnly.Node, d.MaxmemoryPolicy.Node = node, node
	return d, nil
}

// configGet returns the value of one setting, or why the server would not
// say: a reply such as "ERR unknown command" or NOPERM. Its error is a
// failure to talk to the server.
func configGet(ctx context.Context, c redis.Cmdable, name string) (value, reason string, err error) {
	m, err := c.ConfigGet(ctx, name).Result()
	var refused redis.Error
	switch {
	case errors.As(err, &refused):
		return "", fmt.Sprintf("CONFIG GET %s: %s", name, strings.TrimSpace(err.Error())), nil
	case err != nil:
		return "", "", err
	}
	v, ok := m[name]
	if !ok {
		return "", fmt.Sprintf("CONFIG GET %s: no such setting", name), nil
	}
	return v, "", nil
}

func judgeAppendOnly(appendonly, save, reason string) Verdict {
	v := Verdict{Setting: SettingAppendOnly, Fix: "appendonly yes"}
	value := fmt.Sprintf("appendonly=%s and save=%q", appendonly, save)
	switch {
	case reason != "":
		v.State, v.Value, v.Fix = Unknown, reason, ""
	case appendonly == "yes":
		v.State, v.Value, v.Fix = OK, "appendonly=yes", ""
	case save == "":
		v.State, v.Value = AtRisk, value
		v.Consequence = "nothing is persisted: a restart loses every record, and later duplicates are processed again"
	default:
		v.State, v.Value = AtRisk, value
		v.Consequence = "RDB snapshots only: a restart loses the records written since the last snapshot, and their duplicates are processed again"
	}
	return v
}

func judgeMaxmemoryPolicy(policy, reason string) Verdict {
	v := Verdict{Setting: SettingMaxmemoryPolicy, Value: "maxmemory-policy=" + policy, Fix: "maxmemory-policy noeviction"}
	switch {
	case reason != "":
		v.State, v.Value, v.Fix = Unknown, reason, ""
	case policy == "noeviction":
		v.State, v.Fix = OK, ""
	case strings.HasPrefix(policy, "volatile-"):
		v.State = AtRisk
		v.Consequence = "every record has a TTL, so records are evicted under memory pressure, and their duplicates are processed again"
	default:
		v.State = AtRisk
		v.Consequence = "records are evicted under memory pressure, and their duplicates are processed again"
	}
	return v
}

// worst combines the verdicts of a Cluster's masters: per setting, the
// first by address of those most at risk (AtRisk, then Unknown, then OK).
func worst(nodes []Durability) Durability {
	rank := map[State]int{OK: 0, Unknown: 1, AtRisk: 2}
	pick := func(get func(Durability) Verdict) Verdict {
		vs := make([]Verdict, 0, len(nodes))
		for _, d := range nodes {
			vs = append(vs, get(d))
		}
		return slices.MinFunc(vs, func(a, b Verdict) int {
			return cmp.Or(cmp.Compare(rank[b.State], rank[a.State]), cmp.Compare(a.Node, b.Node))
		})
	}
	return Durability{
		AppendOnly:      pick(func(d Durability) Verdict { return d.AppendOnly }),
		MaxmemoryPolicy: pick(func(d Durability) Verdict { return d.MaxmemoryPolicy }),
	}
}
