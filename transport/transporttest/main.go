package transporttest

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// Main runs a broker package's tests m with at least minParallel parallel
// tests at once (see raiseParallel), then calls each of after (stopping
// the Kafka broker the tests started in process, say), and exits with
// the tests' code. A package's TestMain calls it.
func Main(m *testing.M, after ...func()) {
	flag.Parse()
	raiseParallel()
	code := m.Run()
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// minParallel is how many parallel tests run at once unless -parallel
// says otherwise.
const minParallel = 8

// raiseParallel lets minParallel parallel tests run at once where
// -parallel's default, the CPU count, is lower and -parallel was not
// given: a broker package's tests spend their time waiting for brokers,
// not computing (Watermill's Pub/Sub suite alone runs some 90 tests per
// in-flight count, each mostly joining consumer groups and waiting for
// deliveries).
func raiseParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && runtime.GOMAXPROCS(0) < minParallel {
		_ = flag.Set("test.parallel", strconv.Itoa(minParallel))
	}
}
