//go:build race

package vm_test

// raceEnabled shortens the soundness test under the race detector, which
// makes it about ten times slower.
const raceEnabled = true
