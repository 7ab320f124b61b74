package vm_test

import (
	"strings"
	"testing"
)

// TestSoundnessTooFew: the statistics of a generator that has broken, in
// each of the ways that would leave TestSoundness with nothing to find,
// fail it; those of a working one, as the generator gives them, do not.
func TestSoundnessTooFew(t *testing.T) {
	healthy := func() *soundStats {
		s := newSoundStats()
		s.plans, s.rejected, s.clean, s.runs, s.json, s.streams, s.steps = 400, 200, 200, 200, 80, 35, 900
		return s
	}
	if msg := healthy().tooFew(); msg != "" {
		t.Fatalf("a working generator's statistics: %s", msg)
	}
	for _, c := range []struct {
		name   string
		breaks func(*soundStats)
		want   string
	}{
		{"few plans drawn", func(s *soundStats) {
			s.plans, s.rejected, s.clean, s.runs, s.json, s.streams, s.steps = 10, 5, 5, 5, 2, 1, 20
		}, "only 10 plans were drawn"},
		{"plans that do not parse", func(s *soundStats) { s.parseErrs, s.rejected, s.clean, s.runs = 300, 50, 50, 50 }, "300 of 400 plans do not parse"},
		{"plans the checker rejects", func(s *soundStats) { s.rejected, s.clean, s.runs = 390, 10, 10 }, "only 10 of 400 plans check clean"},
		{"clean plans that do not run", func(s *soundStats) { s.runs = 0 }, "0 plans ran of the 200 that checked clean"},
		{"no plans in the JSON form", func(s *soundStats) { s.json = 0 }, "only 0 of 400 plans are in the JSON form"},
		{"no streams", func(s *soundStats) { s.streams = 0 }, "only 0 of 200 runs are streams"},
		{"plans without steps", func(s *soundStats) { s.steps = 0 }, "only 0 steps ran in 200 runs"},
	} {
		s := healthy()
		c.breaks(s)
		if msg := s.tooFew(); !strings.Contains(msg, c.want) {
			t.Errorf("%s: tooFew says %q, want %q", c.name, msg, c.want)
		}
	}
}
