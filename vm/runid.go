package vm

import (
	"crypto/rand"
	"encoding/hex"
)

// NewRunID returns a new random run ID: 8 hexadecimal digits from
// crypto/rand, the form of the journal's run IDs. Run gives a run one
// when Options.RunID is empty, so that the idempotency keys of its calls
// are its own.
func NewRunID() string {
	var b [4]byte
	rand.Read(b[:]) // never fails (crypto/rand.Read)
	return hex.EncodeToString(b[:])
}
