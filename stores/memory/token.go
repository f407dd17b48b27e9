package memory

import (
	"strconv"

	"github.com/onceflow/onceflow/stores"
)

// tokens issues the fencing tokens of one Store: a random prefix drawn
// once, then a sequence number. A token is only ever compared within the
// store that issued it, and the store lives no longer than its process, so
// the sequence makes every token unique where it counts; the prefix keeps
// the tokens of two stores (two replicas, say, in one log) apart. Unlike
// stores.NewToken it reads no random bits per acquisition. It is guarded
// by the store's mutex.
type tokens struct {
	prefix string
	issued uint64
}

func newTokens() tokens {
	return tokens{prefix: string(stores.NewToken())[:16] + "-"}
}

// next returns a token no earlier call returned.
func (t *tokens) next() stores.Token {
	t.issued++
	b := make([]byte, 0, 32)
	b = append(b, t.prefix...)
	return stores.Token(strconv.AppendUint(b, t.issued, 36))
}
