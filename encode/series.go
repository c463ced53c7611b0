package encode

// SeriesSet holds the rendered series of one object in encode-ready form.
// Buf holds each series' labels as protobuf bytes, back to back; Refs points
// into it. A SeriesSet is immutable once handed to a store: a new event
// renders a new set instead of editing this one, so snapshots and queues may
// keep referring to its bytes without copying them.
type SeriesSet struct {
	// Buf is the encoded labels of every series, back to back.
	Buf []byte
	// Refs is one entry per series, in render order.
	Refs []Ref
	// Shared is the length of the shared region at the end of Buf: the
	// object's labels its series refer to instead of repeating them
	// (Compactor, refs.go); 0 without one.
	Shared uint32
	// Timestamps, when not nil, holds each series' own sample time in
	// milliseconds, parallel to Refs (series read from a kubelet carry the
	// time cAdvisor took them); nil means the snapshot's time.
	Timestamps []int64
}

// Ref locates one series in a SeriesSet's buffer.
type Ref struct {
	// Off and Len locate the series' encoded labels in SeriesSet.Buf.
	Off, Len uint32
	// Hash is a hash of the label set, stable across processes; queues shard
	// by it so that a series always travels in one shard.
	Hash uint64
	// Value is the sample value.
	Value float64
}

// Len is the number of series in the set.
func (s *SeriesSet) Len() int { return len(s.Refs) }

// Labels returns the encoded labels of series i, which may refer to the
// set's shared labels (refs.go): its capacity ends at the end of the set's
// buffer, where those are. The slice aliases the set's buffer and must not
// be modified or appended to; AppendLabels copies it.
func (s *SeriesSet) Labels(i int) []byte {
	r := s.Refs[i]
	return s.Buf[r.Off : r.Off+r.Len : len(s.Buf)]
}

// Reset empties the set, keeping its capacity.
func (s *SeriesSet) Reset() {
	s.Buf = s.Buf[:0]
	s.Refs = s.Refs[:0]
	s.Shared = 0
	if s.Timestamps != nil {
		s.Timestamps = s.Timestamps[:0]
	}
}

// Clone returns a copy whose buffers are exactly as long as needed, so that a
// set rendered into reused scratch space can be kept without holding on to
// the scratch space's spare capacity.
func (s *SeriesSet) Clone() SeriesSet {
	c := SeriesSet{Shared: s.Shared}
	if len(s.Refs) == 0 {
		c.Shared = 0
		return c
	}
	c.Buf = append(make([]byte, 0, len(s.Buf)), s.Buf...)
	c.Refs = append(make([]Ref, 0, len(s.Refs)), s.Refs...)
	if s.Timestamps != nil {
		c.Timestamps = append(make([]int64, 0, len(s.Timestamps)), s.Timestamps...)
	}
	return c
}
