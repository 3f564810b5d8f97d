package local

// table maps hashed keys to int32 values for one text at a time. It replaces
// a Go map because a map's clear costs time in proportion to its capacity,
// which a single long text grows: table forgets its entries by bumping a
// generation instead. Keys must be well mixed hashes.
type table struct {
	slots []slot
	mask  uint64
	gen   uint32
	n     int
}

type slot struct {
	key uint64
	gen uint32
	val int32
}

func newTable(size int) table {
	t := table{slots: make([]slot, size), mask: uint64(size - 1), gen: 1}
	return t
}

// reset forgets every entry.
func (t *table) reset() {
	t.gen++
	t.n = 0
	if t.gen == 0 { // wrapped: old stamps could look current
		clear(t.slots)
		t.gen = 1
	}
}

// lookup returns the value of key and true, or a pointer to fill in for a
// new entry and false. The pointer is valid until the next lookup.
func (t *table) lookup(key uint64) (*int32, bool) {
	if (t.n+1)*2 > len(t.slots) {
		t.grow()
	}
	for i := key >> 7 & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			s.key, s.gen = key, t.gen
			t.n++
			return &s.val, false
		}
		if s.key == key {
			return &s.val, true
		}
	}
}

// grow doubles the slots, keeping the current entries.
func (t *table) grow() {
	old, gen := t.slots, t.gen
	t.slots = make([]slot, 2*len(old))
	t.mask = uint64(len(t.slots) - 1)
	t.gen = 1
	for _, s := range old {
		if s.gen != gen {
			continue
		}
		for i := s.key >> 7 & t.mask; ; i = (i + 1) & t.mask {
			if t.slots[i].gen != t.gen {
				t.slots[i] = slot{key: s.key, gen: t.gen, val: s.val}
				break
			}
		}
	}
}
