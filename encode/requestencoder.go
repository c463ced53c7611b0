package encode

// Content types and protocol versions of the two Remote-Write versions, as
// sent in the Content-Type and X-Prometheus-Remote-Write-Version headers.
const (
	// ContentTypeV1 is the Content-Type of a prometheus.WriteRequest body.
	ContentTypeV1 = "application/x-protobuf"
	// VersionV1 is the Remote-Write 1.0 version header value.
	VersionV1 = "0.1.0"
	// ContentTypeV2 is the Content-Type of an io.prometheus.write.v2.Request
	// body.
	ContentTypeV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	// VersionV2 is the Remote-Write 2.0 version header value.
	VersionV2 = "2.0.0"
)

// RequestEncoder turns a batch of samples into a compressed Remote-Write
// request body (snappy; zstd for VictoriaMetrics' protocol). The send path holds one per shard and does not
// need to know which protocol version it speaks. Implementations keep scratch
// space between calls and are not safe for concurrent use.
type RequestEncoder interface {
	// Encode returns the compressed request body holding one series per
	// sample, in order, reusing dst's capacity when it is large enough. The
	// result is valid until the next call with the same dst.
	Encode(dst []byte, samples []Sample) []byte
	// ContentType is the value of the request's Content-Type header.
	ContentType() string
	// Version is the value of the request's
	// X-Prometheus-Remote-Write-Version header.
	Version() string
	// RawLen is the uncompressed length of the last request encoded: what
	// a receiver's limit on a request's size measures.
	RawLen() int
}

var (
	_ RequestEncoder = (*V1Encoder)(nil)
	_ RequestEncoder = (*V2Encoder)(nil)
)

// V1Encoder encodes prometheus.WriteRequest (Remote-Write 1.0) bodies. It
// carries no metadata: 1.0 sends metadata in requests of its own. The zero
// value is ready to use.
type V1Encoder struct {
	// raw is the uncompressed request, kept between calls for its capacity.
	raw []byte
}

// Encode implements RequestEncoder.
func (e *V1Encoder) Encode(dst []byte, samples []Sample) []byte {
	e.raw = AppendWriteRequest(e.raw[:0], samples)
	return Compress(dst, e.raw)
}

// ContentType implements RequestEncoder.
func (*V1Encoder) ContentType() string { return ContentTypeV1 }

// RawLen implements RequestEncoder.
func (e *V1Encoder) RawLen() int { return len(e.raw) }

// Version implements RequestEncoder.
func (*V1Encoder) Version() string { return VersionV1 }
