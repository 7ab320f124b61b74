package bench

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestSameAsPeerHarness: the plans are byte for byte the files the peer
// harness's Python generator writes (testdata/peer-plans.sha256 holds the
// SHA-256 of each, from `sha256sum *.json` over its output), so figures
// measured on either are measured on the same plans.
func TestSameAsPeerHarness(t *testing.T) {
	f, err := os.Open("testdata/peer-plans.sha256")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		want[name] = sum
	}
	checked := 0
	for _, e := range Catalogue() {
		if e.Group == "scale" {
			continue
		}
		for name, data := range map[string][]byte{e.Name + ".json": e.Plan().JSON(), e.Name + ".meta.json": e.Meta().MetaJSON()} {
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != want[name] {
				t.Errorf("%s: sha256 %s, the peer harness writes %s", name, got, want[name])
			}
			checked++
		}
	}
	if checked != len(want) {
		t.Errorf("checked %d files, the peer harness writes %d", checked, len(want))
	}
}

// TestPyRandom: the generator reproduces CPython's random.Random; the
// values are printed by Python 3.11 for the same seeds and calls.
func TestPyRandom(t *testing.T) {
	r := newPyRandom(7)
	for _, want := range []float64{0.32383276483316237, 0.15084917392450192, 0.6509344730398537} {
		if got := r.random(); got != want {
			t.Errorf("random() = %v, want %v", got, want)
		}
	}
	if got := r.below(10); got != 1 {
		t.Errorf("randrange(10) = %d, want 1", got)
	}
	if got := r.sample(100, 3); got[0] != 68 || got[1] != 12 || got[2] != 46 {
		t.Errorf("sample(range(100), 3) = %v, want [68 12 46]", got)
	}
	if got := r.sample(10, 3); got[0] != 9 || got[1] != 0 || got[2] != 3 {
		t.Errorf("sample(range(10), 3) = %v, want [9 0 3]", got)
	}
	if got := r.randint(1, 3); got != 1 {
		t.Errorf("randint(1, 3) = %d, want 1", got)
	}
	if got := r.uint32(); got != 369140570 {
		t.Errorf("getrandbits(32) = %d, want 369140570", got)
	}
	if got := newPyRandom(1<<40 + 5).uint32(); got != 2166296868 {
		t.Errorf("a 64-bit seed: getrandbits(32) = %d, want 2166296868", got)
	}
}

// TestMeta: the shape of the skewed plan is what makes it a test of
// dataflow scheduling: its level-by-level bound is far above its
// critical path.
func TestMeta(t *testing.T) {
	e, ok := Lookup("lat-skewed-10x20")
	if !ok {
		t.Fatal("no lat-skewed-10x20")
	}
	m := e.Meta()
	if m.Nodes != 201 || m.CriticalPathMs != 560 || m.SuperstepMs != 1001 || m.Depth != 21 {
		t.Errorf("meta %+v", m)
	}
	c := Chain(5, 2).Meta()
	if c.Depth != 5 || c.Edges != 4 || c.CriticalPathMs != 10 || c.Levels != 5 || c.MaxIndegree != 1 || c.TotalWorkMs != 10 {
		t.Errorf("chain meta %+v", c)
	}
}
