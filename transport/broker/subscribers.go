package broker

import (
	"errors"
	"io"
	"sync"
)

// Subscribers holds the subscribers a transport created, for its Close to
// close them all. The zero value holds none. Safe for concurrent use.
type Subscribers struct {
	mu   sync.Mutex
	subs []io.Closer
}

// Add records s, to be closed by Close.
func (ss *Subscribers) Add(s io.Closer) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.subs = append(ss.subs, s)
}

// Close closes every subscriber recorded so far and forgets them, so that
// closing twice closes each once.
func (ss *Subscribers) Close() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var err error
	for _, s := range ss.subs {
		err = errors.Join(err, s.Close())
	}
	ss.subs = nil
	return err
}
