// Package encode turns rendered series into Remote-Write 1.0 and 2.0 request
// bodies.
//
// It is pure: series in, bytes out, with no I/O or clock. Its one global is
// the interned table of labels many objects' series share (family names,
// external labels, enumerations such as a pod's phase), which only grows
// and is bounded (refs.go).
//
// Series are kept encode-ready from the moment they are rendered: a
// [LabelsBuilder] sorts a series' labels and writes them once as the
// protobuf bytes of the repeated `labels` field of a prompb.TimeSeries,
// together with a hash of the label set. A label that other series carry
// too is written as a reference instead: to the interned table, or to the
// one copy the object's set keeps of the labels its series share
// ([Compactor]), which keeps a series to a fraction of its full size. Encoding a
// batch at send time is then copying those bytes, expanding the
// references, and appending one prompb.Sample per series, so a snapshot
// costs no allocation per series:
//
//	LabelsBuilder ──► SeriesSet (label bytes + hash + value, per object)
//	                     │ snapshot: Sample{Labels, Value, Timestamp}
//	                     ▼
//	AppendWriteRequest ──► protobuf prompb.WriteRequest ──► Compress (snappy block)
//
// Both protocol versions sit behind [RequestEncoder]: [V1Encoder] is the path
// above, a chunk of the request at a time, so that it never holds a whole
// request uncompressed; [V2Encoder] walks the same label bytes into a per-request symbol
// table (io.prometheus.write.v2.Request, with metadata inline from a
// [MetadataFunc]), finding the labels a set shares by their address rather
// than their bytes, and reuses its tables and buffers, so it too allocates
// nothing per series once warm.
package encode
