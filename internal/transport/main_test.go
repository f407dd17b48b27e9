package transport

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// TestMain runs the tests with at least minParallel parallel tests at
// once (see raiseParallel), and stops the Kafka broker the tests started
// in process once every test has run.
func TestMain(m *testing.M) {
	flag.Parse()
	raiseParallel()
	code := m.Run()
	brokerenv.StopKafka()
	os.Exit(code)
}

// minParallel is how many parallel tests run at once unless -parallel
// says otherwise.
const minParallel = 8

// raiseParallel lets minParallel parallel tests run at once where
// -parallel's default, the CPU count, is lower and -parallel was not
// given: the package's tests spend their time waiting for brokers, not
// computing (Watermill's Pub/Sub suite alone runs some 180 tests, each
// mostly joining consumer groups and waiting for deliveries).
func raiseParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && runtime.GOMAXPROCS(0) < minParallel {
		_ = flag.Set("test.parallel", strconv.Itoa(minParallel))
	}
}
