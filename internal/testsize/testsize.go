// Package testsize says how large the long tests are. A soak, stress or
// exhaustive test (many processes started over and over, every byte of an
// answer cut, thousands of random plans) runs a small version by default,
// which proves the same property on fewer inputs, so that go test stays
// quick; with OBELISK_TEST_FULL=1 in the environment, as .ci/run sets
// it, it runs in full.
package testsize

import (
	"os"
	"testing"
)

// Env names the environment variable that asks for the full tests.
const Env = "OBELISK_TEST_FULL"

// Pick returns full when the environment asks for the full tests
// (OBELISK_TEST_FULL=1), and small otherwise, saying so in the test's
// log.
func Pick[T any](t testing.TB, small, full T) T {
	t.Helper()
	if os.Getenv(Env) == "1" {
		return full
	}
	t.Logf("the small version (%v; %s=1 runs it with %v)", small, Env, full)
	return small
}
