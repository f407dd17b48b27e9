package receiver_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// With the store down, the receiver's error names the operation, the key
// and the outage once each: the store says what it alone knows (the
// operation and the key as stored), the receiver adds nothing it said.
func TestStoreOutageErrorSaysEachThingOnce(t *testing.T) {
	addr := testenv.ClosedAddr(t) // a Redis that is down
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	r, err := receiver.New(receiver.Config{Store: testenv.RedisStore(t, client, redisstore.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(context.Background(), "charge", "pay-1", []byte("fp"),
		func(context.Context) ([]byte, error) { return nil, nil })
	want := `claiming key "charge:pay-1": store unavailable: dial tcp ` + addr + `: connect: connection refused`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
