// Package diskbuffer is the on-disk format of an endpoint's disk buffer:
// it stores snapshot frames (encode.Frame) while a receiver is down, each
// as its difference from the frame before it, and regenerates every frame
// in full when read, as the live path would have sent it.
//
// State series rarely change between snapshots: a large cluster's frame
// costs megabytes as Remote-Write requests, but the next one differs in a
// few objects. The writer keeps the sets of the last
// frame it wrote (sets are immutable, so an unchanged object is found by
// comparing pointers) and stores per frame only
//
//   - the keys of removed objects,
//   - per changed object: its changed values (opValues, when its labels
//     are byte for byte the same), or its series as copies of the old
//     set's plus new labels (opDiff), or its whole set (opSet); a set
//     whose series carry their own sample times (kubelet series) stores
//     them after its values (the setTimestamps flag of a whole set, or
//     opValuesTimed), each as the zigzag difference from the one before,
//   - the staleness markers, each as a reference to a series of a removed
//     or changed object, or in full.
//
// A directory holds segments and a checkpoint:
//
//	00000001.seg  00000002.seg  ...  0000000n.seg   checkpoint
//	[key][delta]...[delta]  [key][delta]...         (acked, handed out)
//
// Each segment starts with a keyframe (every object in full) followed by
// deltas, so a segment can be read on its own and segments are the unit of
// deletion: what the size cap leaves is always decodable. A new segment
// starts at every Open (the last frame written is unknown), after a failed
// write, and once the deltas since the keyframe add up to delta_ratio
// (default 1) times its size, which keeps the log within about twice the
// bytes of its deltas.
//
// Records are framed as [length uvarint][CRC-32C big
// endian][record]. A record is
//
//	[version 1][kind: 1 keyframe, 2 delta; +0x80 "more" on all of a frame's records but its last][timestamp varint][samples uvarint][snappy block of the body]
//
// A frame is one record or several: the writer seals a record once its
// body reaches 1 MiB (at the next object, removal or marker) and writes
// it at once, so that writing a frame, or reading one back, holds one
// record's body and its compressed copy, whatever the number of series (a
// large cluster's keyframe runs to tens of megabytes). A body holds counted runs: a
// keyframe's objects, then its staleness markers; a delta's removed keys,
// its changed objects, then its staleness markers. A frame's runs are its
// records' one after the other, and a staleness marker refers to the
// removed and changed sets counted from the frame's first record. Every
// record of a frame repeats its kind, timestamp and sample count, so
// that a deletion counts frames and samples from the headers of their
// last records. A frame that fits in one record is stored as the first
// format stored every frame, so logs written before frames could span
// records are read as they were written.
//
// A segment's size as the log tracks it grows by whole frames: the
// reader never meets a frame being written. A failed write cuts the head
// back to where its frame began; a crash may leave a frame's records cut
// off at the end of a segment, which the reader skips as bad data.
//
// In a body, counts are uvarints and keys 8 bytes little endian; a value
// is a uvarint, even for an integer below 2^52 (zigzag, shifted left by
// one), or 1 followed by the 8 bytes of its bits. A series' hash is
// stored only when it is not the xxhash encode.LabelsBuilder computes
// from its labels (see encode.HashLabels).
//
// Reading is Next, then Ack: Next hands out frames in order, several ahead
// if asked; Ack acknowledges the oldest. The checkpoint (temp file +
// rename) holds the position after the last acknowledged frame and after
// the last handed out; a reopened log decodes its segment from the
// keyframe up to the first, without handing those frames out, and flags
// the frames up to the second Info.Resent. Both are frame boundaries.
//
// A reader that keeps up does not read back what it was just given. The
// endpoint appends every frame, and reads it back to send it, also while
// the receiver is healthy; decoding each frame would make the reader hold
// a second copy of every object's series, as large as they are, beside the
// series maps. So Append keeps, beside its frame's position, the frame it
// was given (the set pointers, which the encoder holds anyway, and copies
// of the small Objects and Stale slices), and when the next frame Next
// would read is that one, Next hands out a frame of those sets instead,
// and they become the state later deltas are decoded on: a reader that
// falls behind decodes copies of the changed objects only, and shares
// again once it catches up. That frame was written by this process's
// most recent Append and follows the reader's state directly (a keyframe,
// or a delta read with a valid state, which in a segment means the state
// of the frame before it): a restart, a failed Append, the size cap or
// bad data leave the reader reading the log until it is there again. The
// frame is the one its records store, bit for bit, except for the order
// of its objects; what is on disk is not checked for it.
//
// Bad data (a CRC mismatch, a torn tail, a frame cut off, a body that
// does not decode or that would put series out of range, a record of one
// frame among another's) is skipped and counted, never trusted: the rest
// of its segment goes with it, since its deltas apply to a state now
// unknown, and reading goes on at the next keyframe.
//
// Files are created 0600, the directory 0700. A failed write or rotation
// (a full disk) fails that Append only; the next one starts a new segment.
//
// All methods are safe for concurrent use; one appender and one reader at
// a time is the intended use.
package diskbuffer
