// Package diskbuf is an on-disk FIFO of opaque records: the building block
// of an endpoint's disk buffer (issue 4, "Disk buffer"). The caller stores
// whatever it needs to resend a batch (typically an encoded, compressed
// Remote-Write request plus a small header); diskbuf never looks inside.
//
// A [Buffer] owns one directory:
//
//	00000001.seg  00000002.seg  ...  0000000n.seg   checkpoint
//	└── oldest, read side ──┘        └── head ──┘   (segment, offset)
//
// [Buffer.Append] frames each record as
//
//	[length uvarint][CRC-32C (Castagnoli) of payload, 4 bytes big endian][payload]
//
// and appends it to the head segment, starting a new head once the next
// frame would pass max_segment_size. Each [Open] starts a fresh head, so a
// record torn by a crash never has good records written after it in the
// same file.
//
// The read side is peek-then-acknowledge: [Buffer.Peek] returns the oldest
// unacknowledged record, again and again until [Buffer.Ack] moves past it;
// [Buffer.PeekNext] hands out the records after it within the same segment,
// so that a reader can send several at once, and Ack then covers them all.
// Ack writes the read position to the checkpoint file (temp file + rename,
// so it is always whole), and a reopened Buffer resumes there: after a
// crash at most the records that were handed out but not acknowledged are
// read again. Fully read segments are deleted.
//
// When max_size is set and an append would pass it, the oldest whole
// segments are deleted first, except the one holding records in flight
// (handed out, not yet acknowledged): then the segment after it goes.
// Append returns how many unacknowledged records went with them, [Stats]
// counts them, and Config.OnDrop sees each. Nothing is dropped silently.
//
// A torn tail or a CRC mismatch ends the reading of that segment: the
// reader counts a [*CorruptError] (see [Stats]) and goes on with the next
// segment. A corrupt or unusable checkpoint is counted the same way and
// reading restarts at the oldest segment, which may resend, never lose.
//
// All methods are safe for concurrent use; one appender and one reader at a
// time is the intended use.
package diskbuf
