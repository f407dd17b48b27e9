package receiver_test

import (
	"fmt"

	"github.com/onceflow/onceflow/middleware/receiver"
)

func ExampleRecordKey() {
	fmt.Println(receiver.RecordKey("charge", "pay-1"))
	// Output:
	// charge:pay-1
}
