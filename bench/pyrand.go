package bench

// pyRandom is CPython's random.Random (a Mersenne Twister seeded by
// init_by_array) with the few methods the plan generators use, so that the
// plans made here are the plans the peer harness's Python generator makes
// from the same seeds, call for call.
type pyRandom struct {
	mt  [624]uint32
	idx int
}

// newPyRandom seeds like random.Random(seed) for a non-negative int: the
// key is the seed's 32-bit words, least significant first.
func newPyRandom(seed uint64) *pyRandom {
	key := []uint32{uint32(seed)}
	if hi := uint32(seed >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &pyRandom{}
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(len(r.mt), len(key)); k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= len(r.mt) {
			r.mt[0] = r.mt[len(r.mt)-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := len(r.mt) - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= len(r.mt) {
			r.mt[0] = r.mt[len(r.mt)-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < len(r.mt); i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = len(r.mt)
}

func (r *pyRandom) uint32() uint32 {
	const n, m = 624, 397
	if r.idx >= n {
		for k := 0; k < n; k++ {
			y := r.mt[k]&0x80000000 | r.mt[(k+1)%n]&0x7fffffff
			v := r.mt[(k+m)%n] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// random is random.random(): a float in [0, 1) from 53 random bits.
func (r *pyRandom) random() float64 {
	a, b := r.uint32()>>5, r.uint32()>>6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// below is random._randbelow(n) for 0 < n < 2^32: rejection sampling on
// n.bit_length() bits.
func (r *pyRandom) below(n int) int {
	k := 0
	for v := n; v > 0; v >>= 1 {
		k++
	}
	for {
		v := int(r.uint32() >> (32 - k))
		if v < n {
			return v
		}
	}
}

// randint is random.randint(a, b): a ≤ result ≤ b.
func (r *pyRandom) randint(a, b int) int { return a + r.below(b-a+1) }

// sample is random.sample(range(n), k) for k ≤ 5.
func (r *pyRandom) sample(n, k int) []int {
	out := make([]int, k)
	if n <= 21 { // CPython keeps a pool when it is smaller than a set
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := range k {
			j := r.below(n - i)
			out[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return out
	}
	selected := make(map[int]bool, k)
	for i := range k {
		j := r.below(n)
		for selected[j] {
			j = r.below(n)
		}
		selected[j] = true
		out[i] = j
	}
	return out
}
