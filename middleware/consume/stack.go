package consume

// messageStack is the goroutine stack the Watermill face grows to before it
// handles a message: enough for the receiver's deepest path on the memory
// store (the claim, through the store's interface) and for the call that
// completes the record, with room left for a short handler.
//
// Watermill handles each message in a goroutine of its own, whose stack
// starts at 2 KiB (or the runtime's running average, which the many small
// goroutines of a pub/sub keep there). The receiver's path needs about
// twice that, so left alone the stack grows twice, each time deep in a
// store call, and each growth copies the stack and adjusts every frame on
// it. Growing it once, before the receiver's first frame, copies only the
// transport's few frames beneath.
const messageStack = 8 << 10

// growStack makes the calling goroutine's stack messageStack bytes, or
// leaves it if it is that already. It is the technique of CockroachDB's
// growstack package: a frame too large for the current stack makes the
// runtime double the stack until the frame fits, once, while the stack is
// shallow. Half of messageStack, plus the guard the runtime keeps free,
// takes a 2 KiB stack to messageStack in one step.
//
//go:noinline
func growStack() {
	var frame [messageStack / 2]byte
	keep(frame[:])
}

// keep stops the compiler from dropping growStack's frame.
//
//go:noinline
func keep(b []byte) { b[0] = 0 }
