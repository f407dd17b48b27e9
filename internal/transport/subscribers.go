package transport

import (
	"errors"
	"io"
	"sync"
)

// subscribers holds the subscribers a transport created, for its Close to
// close them all. Safe for concurrent use.
type subscribers struct {
	mu   sync.Mutex
	subs []io.Closer
}

// add records s, to be closed by close.
func (ss *subscribers) add(s io.Closer) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.subs = append(ss.subs, s)
}

// close closes every subscriber recorded so far and forgets them, so that
// closing twice closes each once.
func (ss *subscribers) close() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var err error
	for _, s := range ss.subs {
		err = errors.Join(err, s.Close())
	}
	ss.subs = nil
	return err
}
