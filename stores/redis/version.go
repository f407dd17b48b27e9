package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// MinVersion is the oldest Redis server the store runs on: a Claim is SET
// with NX and GET together, which Redis takes since 7.0.
const MinVersion = "7.0"

// ErrTooOld means the Redis server is older than [MinVersion].
var ErrTooOld = errors.New("the Redis server is too old for the record store")

// CheckVersion reads the version of the server behind client (of every
// master, on a Cluster) from INFO server and returns an error matching
// [ErrTooOld] that names it when it is older than MinVersion: a program
// checks it before it serves, rather than have every Claim refused. A
// server that does not say its version (INFO denied, as it is to an ACL
// user without @dangerous) refuses nothing; one that cannot be reached is
// an error.
func CheckVersion(ctx context.Context, client redis.UniversalClient) error {
	return eachServer(ctx, client, checkNodeVersion)
}

// checkNodeVersion checks one server; node names it in the error ("" for
// a single node).
func checkNodeVersion(ctx context.Context, c redis.Cmdable, node string) error {
	info, err := c.Info(ctx, "server").Result()
	var refused redis.Error
	switch {
	case errors.As(err, &refused):
		// INFO denied, as an ACL user without @dangerous is: the
		// server does not say its version.
		return nil
	case err != nil:
		return fmt.Errorf("reading the version of %s: %w", nodeName(node), err)
	}
	return versionError(info, node)
}

// versionError judges the INFO server reply of node.
func versionError(info, node string) error {
	version, ok := infoField(info, "redis_version")
	if !ok || atLeast(version, MinVersion) {
		return nil
	}
	return fmt.Errorf("%w: %s runs %s, and the store needs %s or later", ErrTooOld, nodeName(node), version, MinVersion)
}

func nodeName(node string) string {
	if node == "" {
		return "the server"
	}
	return node
}

// infoField is the value of field in an INFO reply.
func infoField(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}

// atLeast reports whether version (major.minor[.patch]) is min or later;
// a version it cannot read is taken as later, refusing nothing.
func atLeast(version, min string) bool {
	v, okV := majorMinor(version)
	m, okM := majorMinor(min)
	if !okV || !okM {
		return true
	}
	return v[0] > m[0] || (v[0] == m[0] && v[1] >= m[1])
}

func majorMinor(version string) ([2]int, bool) {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return [2]int{major, minor}, err1 == nil && err2 == nil
}
