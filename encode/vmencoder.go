package encode

import (
	"github.com/klauspost/compress/zstd"
)

// VictoriaMetrics' own remote write protocol sends the Remote-Write 1.0
// prometheus.WriteRequest, compressed with zstd instead of snappy, with
// these headers (VictoriaMetrics app/vmagent/remotewrite/client.go,
// https://docs.victoriametrics.com/victoriametrics/vmagent/#victoriametrics-remote-write-protocol).
const (
	// VMContentEncoding is the Content-Encoding of a VictoriaMetrics
	// protocol body.
	VMContentEncoding = "zstd"
	// VMVersionHeader names the header that marks the protocol.
	VMVersionHeader = "X-VictoriaMetrics-Remote-Write-Version"
	// VersionVM is the value of VMVersionHeader.
	VersionVM = "1"
)

// VMLevel is the zstd level of VMEncoder. SpeedFastest keeps the CPU per
// sample close to snappy's; the higher levels save a few more percent of
// bytes for several times the time (BenchmarkVMEncode).
var VMLevel = zstd.SpeedFastest

// VMEncoder encodes VictoriaMetrics protocol bodies: the same
// prometheus.WriteRequest as V1Encoder, compressed with zstd. The zero value
// is ready to use; it makes its zstd encoder on the first call and keeps it,
// so that the steady state allocates nothing.
type VMEncoder struct {
	// raw is the uncompressed request, kept between calls for its capacity.
	raw []byte
	zw  *zstd.Encoder
}

var _ RequestEncoder = (*VMEncoder)(nil)

// Encode implements RequestEncoder.
func (e *VMEncoder) Encode(dst []byte, samples []Sample) []byte {
	e.raw = AppendWriteRequest(e.raw[:0], samples)
	if e.zw == nil {
		// One goroutine per encoder and no frame of history beyond a
		// request: a request is compressed whole (EncodeAll), by its shard.
		zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(VMLevel),
			zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic("encode: zstd options: " + err.Error()) // the options are constant
		}
		e.zw = zw
	}
	return e.zw.EncodeAll(e.raw, dst[:0])
}

// ContentType implements RequestEncoder: the 1.0 type, as vmagent sends.
func (*VMEncoder) ContentType() string { return ContentTypeV1 }

// Version implements RequestEncoder: the value of VMVersionHeader.
func (*VMEncoder) Version() string { return VersionVM }

// RawLen implements RequestEncoder.
func (e *VMEncoder) RawLen() int { return len(e.raw) }
