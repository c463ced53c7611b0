package encode

import (
	"encoding/binary"
	"slices"
	"unsafe"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Protobuf tags of io.prometheus.write.v2 fields (field number << 3 | wire
// type).
const (
	tagV2Symbols    = 4<<3 | 2 // Request.symbols
	tagV2Timeseries = 5<<3 | 2 // Request.timeseries
	// TimeSeries.samples and its Sample have the field numbers and types
	// of Remote-Write 1.0's, so sampleTime.appendSample writes them.
	tagV2LabelsRefs = 1<<3 | 2 // TimeSeries.labels_refs, packed
	tagV2Metadata   = 5<<3 | 2 // TimeSeries.metadata
	tagV2Type       = 1 << 3   // Metadata.type, varint
	tagV2HelpRef    = 3 << 3   // Metadata.help_ref, varint
	tagV2UnitRef    = 4 << 3   // Metadata.unit_ref, varint
)

// seriesRoom is the most bytes a TimeSeries field takes besides its label
// refs' varints: its tag and length (which may move the body by up to 4
// bytes), the labels_refs tag and length (likewise), the sample
// (appendSample's fixed-size block) and the metadata field (its 16-byte
// block), with 8 bytes for the last label refs' 8-byte store.
const seriesRoom = 2 + 4 + 2 + 4 + 8 + 2 + 9 + 16 + 16

// appendSeries appends s's TimeSeries field to dst: its label refs, its
// sample and its metadata, in one pass, with the bytes
// writev2.TimeSeries.Marshal writes (fields in number order, proto3 zero
// values left out, metadata always present, as gogo writes a non-nullable
// message).
func (e *V2Encoder) appendSeries(dst []byte, s *Sample, table [][]byte) []byte {
	labels := s.Labels
	// A label takes at least 2 bytes of labels and at most 10 bytes of
	// varints.
	dst = slices.Grow(dst, 5*len(labels)+seriesRoom)
	start := len(dst)
	buf := dst[:cap(dst)]
	// Each length is written in one byte behind its field's tag and
	// moved for the rare longer one (putLen).
	buf[start] = tagV2Timeseries
	n := start + 2
	var metric uint32
	if len(labels) > 0 {
		buf[n] = tagV2LabelsRefs
		n += 2
		refsStart := n
		// The address of a shared label: base + its offset in labels'
		// capacity (labelTable). Reading a pointer's address does not
		// keep or make a pointer.
		base := uintptr(unsafe.Pointer(unsafe.SliceData(labels)))
		e.cur, e.next = e.cur[:0], 0
		c := uint64(cap(labels))
		for i := 0; i < len(labels); {
			// The two common cases inline: an interned label this
			// request has met, a shared label the previous series has.
			var refs labelRefs
			l := 0
			if tag := labels[i]; tag >= refShared2 && i+1 < len(labels) {
				if tag >= refInterned2 {
					if v := interned2(tag, labels[i+1]); v < uint64(len(e.interned)) && e.interned[v].gen == e.gen {
						refs, l = e.interned[v].refs, 2
					}
				} else if v := shared2(tag, labels[i+1]); v != 0 && v <= c {
					addr := base + uintptr(c-v)
					if j := e.next; j < len(e.prev) && e.prev[j].addr == addr {
						refs, l = e.prev[j].refs, 2
						e.next = j + 1
						if len(e.cur) < maxPrev {
							e.cur = append(e.cur, e.prev[j])
						}
					}
				}
			}
			if l == 0 {
				refs, l = e.labelRefs(labels, i, base, table)
			}
			i += l
			if refs.metric != 0 {
				metric = refs.metric
			}
			if k := int(refs.enc >> 56); k != 0 {
				// One store of all 8 bytes, of which the next label's
				// (or the sample's) bytes overwrite the extra ones.
				binary.LittleEndian.PutUint64(buf[n:n+8], refs.enc)
				n += k
			} else {
				p := e.wide[uint32(refs.enc)]
				n += len(appendVarint(buf[n:n], p>>32))
				n += len(appendVarint(buf[n:n], p&(1<<32-1)))
			}
		}
		if l := n - refsStart; l < 0x80 {
			buf[refsStart-1] = byte(l)
		} else {
			n = putLen(buf, refsStart-1, n)
		}
		e.prev, e.cur = e.cur, e.prev
	}
	dst = e.ts.appendSample(buf[:n], s.Value, s.Timestamp)
	m := &noMetadata
	if metric > 1 && e.Metadata != nil { // metric-1 is the name's ref
		i := e.symMeta[metric-1]
		if i == metaUnknown {
			i = e.metadata(metric - 1)
		}
		if i >= 0 {
			m = &e.metas[i]
		}
	}
	n = len(dst)
	*(*[16]byte)(buf[n : n+16]) = m.b
	n += int(m.n)
	if l := n - start - 2; l < 0x80 {
		buf[start+1] = byte(l)
		return buf[:n]
	}
	return buf[:putLen(buf, start+1, n)]
}

// putLen writes the length of the field body that runs from at+1 to end at
// buf[at], where one byte was left for it, moving the body on when the
// length takes more. It returns the body's new end.
func putLen(buf []byte, at, end int) int {
	l := end - at - 1
	if l < 0x80 {
		buf[at] = byte(l)
		return end
	}
	k := varintLen(uint64(l))
	copy(buf[at+k:], buf[at+1:end])
	appendVarint(buf[at:at], uint64(l))
	return end + k - 1
}

// metadataField is a TimeSeries.metadata field as written: its tag,
// length and body in the first n bytes of b.
type metadataField struct {
	b [16]byte
	n uint8
}

// noMetadata is the metadata field of a series whose family is unknown:
// empty, but present.
var noMetadata = metadataField{b: [16]byte{tagV2Metadata, 0}, n: 2}

// newMetadataField returns the metadata field of a family. Its body is at
// most 14 bytes: the type (one byte) and two refs, each with its tag.
func newMetadataField(typ writev2.Metadata_MetricType, help, unit uint32) metadataField {
	b := make([]byte, 2, 16)
	b[0] = tagV2Metadata
	if typ != 0 {
		b = appendVarint(append(b, tagV2Type), uint64(typ))
	}
	if help != 0 {
		b = appendVarint(append(b, tagV2HelpRef), uint64(help))
	}
	if unit != 0 {
		b = appendVarint(append(b, tagV2UnitRef), uint64(unit))
	}
	b[1] = byte(len(b) - 2)
	var f metadataField
	f.n = uint8(copy(f.b[:], b))
	return f
}

// finish writes the symbols before the series, which buf holds from
// e.head on, and returns buf (moved if it had to grow) and the request.
func (e *V2Encoder) finish(buf []byte) (all, req []byte) {
	size := 0
	for _, s := range e.strs {
		size += 1 + varintLen(uint64(s.n)) + int(s.n)
	}
	head := e.head
	if size > head {
		// Move the series on to make room, with some to spare next time.
		head = size + size/4
		n := len(buf) - e.head
		if cap(buf) < head+n {
			buf = append(make([]byte, 0, head+n), buf...)
		}
		buf = buf[:head+n]
		copy(buf[head:], buf[e.head:e.head+n])
	}
	e.head = size + size/4
	start := head - size
	sym := buf[start:start]
	for _, s := range e.strs {
		sym = append(sym, tagV2Symbols)
		sym = appendVarint(sym, uint64(s.n))
		sym = append(sym, e.arena[s.off:s.off+s.n]...)
	}
	return buf, buf[start:]
}
