package consume

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
)

// innermost keeps [Install]'s chain the innermost of its router's: when a
// handler starts, the function the chain wraps must be the handler's own.
// A middleware between them would run inside the receiver, where turning
// a failed attempt into a success completes its record: the message is
// then lost, every redelivery answered as a duplicate.
type innermost struct {
	router *message.Router

	mu       sync.Mutex
	handlers map[uintptr]bool // code pointers of the router's handler functions
}

func newInnermost(router *message.Router) *innermost {
	return &innermost{router: router, handlers: map[uintptr]bool{}}
}

// know records the handler functions of the router, as they are when it
// starts.
func (i *innermost) know(handlers map[string]message.HandlerFunc) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, h := range handlers {
		i.handlers[reflect.ValueOf(h).Pointer()] = true
	}
}

// check is the chain's last middleware: it panics, naming the function it
// is given, unless that is a handler's own. A handler added once the
// router runs is looked up then.
func (i *innermost) check(h message.HandlerFunc) message.HandlerFunc {
	pc := reflect.ValueOf(h).Pointer()
	if !i.known(pc) {
		i.know(i.router.Handlers())
	}
	if !i.known(pc) {
		panic(fmt.Errorf("consume: %s runs between the receiver and a handler, where a failure it turns into a success completes the record: add it to the router before it runs, or as RouterConfig.Inner if it returns the handler's errors as they come",
			funcName(pc)))
	}
	return h
}

func (i *innermost) known(pc uintptr) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.handlers[pc]
}

// funcName is the name of the function at pc, as a stack trace shows it.
func funcName(pc uintptr) string {
	if f := runtime.FuncForPC(pc); f != nil {
		return f.Name()
	}
	return fmt.Sprintf("the middleware at %#x", pc)
}
