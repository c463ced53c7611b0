package encode

// Frame is one snapshot as the snapshot loop hands it to every endpoint:
// the series of every object, all at one timestamp, and the series that
// ended since the previous snapshot, which get a staleness marker.
//
// A frame only refers to series sets, which are immutable (see SeriesSet),
// so it costs one Object per object however many series they hold, and
// several endpoints may read one frame at once. Each object is identified by
// a Key that stays the same from frame to frame while the object lives, so
// that two frames can be compared object by object (an unchanged object
// keeps the very same *SeriesSet).
type Frame struct {
	// Timestamp is the snapshot's time in milliseconds; every sample of the
	// frame carries it.
	Timestamp int64
	// Objects are the objects' series; Keys are unique within a frame.
	Objects []Object
	// Stale are the series that ended since the previous frame.
	Stale []Stale
}

// Object is one object's series in a frame.
type Object struct {
	// Key identifies the object across frames (a hash of its UID, or a
	// fixed key for a source that is not an object, such as the agent's
	// own metrics).
	Key uint64
	// Set is the object's series with their values; never modified.
	Set *SeriesSet
}

// Stale is a series that ended: it is sent once with the StaleNaN value.
type Stale struct {
	// Hash is the series' label hash (Ref.Hash).
	Hash uint64
	// Labels are the series' encoded labels; never modified.
	Labels []byte
}

// Samples is the number of samples the frame stands for: one per series
// and one per ended series.
func (f *Frame) Samples() int {
	n := len(f.Stale)
	for _, o := range f.Objects {
		n += o.Set.Len()
	}
	return n
}

// Reset empties the frame, keeping its capacity and dropping its
// references to series sets.
func (f *Frame) Reset() {
	clear(f.Objects)
	clear(f.Stale)
	*f = Frame{Objects: f.Objects[:0], Stale: f.Stale[:0]}
}
