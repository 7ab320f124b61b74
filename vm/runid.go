package vm

import (
	"crypto/rand"
	"encoding/hex"
)

// NewRunID returns a new random run ID: 16 hexadecimal digits (64 bits)
// from crypto/rand, the form of the journal's run IDs. Run gives a run one
// when Options.RunID is empty, so that the idempotency keys of its calls
// are its own: a server that remembers keys for a day would need billions
// of runs of one plan a day to see two runs share one.
func NewRunID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand.Read)
	return hex.EncodeToString(b[:])
}
