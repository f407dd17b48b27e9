package repocheck

import (
	"os/exec"
	"strings"
	"testing"
)

// brokerClients are the import paths of the broker clients, and the
// prefixes of their modules' paths: a service that takes the receiver as
// a library compiles none of them (see brokerClient).
var brokerClients = []string{
	"github.com/ThreeDotsLabs/watermill-kafka", "github.com/IBM/sarama", "github.com/twmb/franz-go",
	"github.com/ThreeDotsLabs/watermill-amqp", "github.com/rabbitmq/amqp091-go",
	"github.com/ThreeDotsLabs/watermill-nats", "github.com/nats-io/nats.go",
	"github.com/ThreeDotsLabs/watermill-redisstream",
	"github.com/ThreeDotsLabs/watermill-sql",
}

// receiverPackages are the receiver's packages a library user imports:
// the core, each face, authentication, signing and metrics.
var receiverPackages = []string{
	"./middleware/receiver", "./middleware/consume", "./middleware/idempotencykey",
	"./middleware/apikey", "./middleware/signing", "./middleware/metrics",
}

// A module that imports only the receiver and one store compiles no broker
// client, and the PostgreSQL glue of transaction mode (exactlyonce) none
// but watermill-sql.
func TestLibraryCompilesNoBrokerClient(t *testing.T) {
	for _, c := range []struct {
		pkgs    []string
		allowed string
	}{
		{append([]string{"./stores/memory"}, receiverPackages...), ""},
		{append([]string{"./stores/redis"}, receiverPackages...), ""},
		{append([]string{"./stores/postgres"}, receiverPackages...), ""},
		{append([]string{"./stores/cache"}, receiverPackages...), ""},
		{[]string{"./exactlyonce"}, "github.com/ThreeDotsLabs/watermill-sql"},
	} {
		cmd := exec.Command("go", append([]string{"list", "-deps"}, c.pkgs...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", c.pkgs, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if client, ok := brokerClient(dep); ok && client != c.allowed {
				t.Errorf("%v compiles %s", c.pkgs, dep)
			}
		}
	}
}
