package testsize

import "testing"

func TestPick(t *testing.T) {
	t.Setenv(Env, "")
	if got := Pick(t, 3, 20); got != 3 {
		t.Errorf("by default: %d, want the small 3", got)
	}
	t.Setenv(Env, "1")
	if got := Pick(t, 3, 20); got != 20 {
		t.Errorf("with %s=1: %d, want the full 20", Env, got)
	}
	t.Setenv(Env, "0")
	if got := Pick(t, false, true); got {
		t.Errorf("with %s=0: the full version", Env)
	}
}
