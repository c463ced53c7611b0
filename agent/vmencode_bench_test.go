package agent

import (
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/kube-state-push/kube-state-push/encode"
)

// BenchmarkVMEncode encodes one snapshot of the 10k-pod cluster as
// VictoriaMetrics protocol requests (the 1.0 request, zstd) at each zstd
// level, beside the snappy 1.0 encoder, in batches of benchBatch samples as
// one shard does; it reports the bytes a sample costs on the wire and the
// time to encode it. It is what encode.VMLevel was chosen by.
func BenchmarkVMEncode(b *testing.B) {
	samples := benchClusterSamples(b, 10_000, 1_000)
	run := func(b *testing.B, enc encode.RequestEncoder) {
		var dst []byte
		compressed := 0
		for batch := range chunks(samples, benchBatch) {
			dst = enc.Encode(dst, batch)
			compressed += len(dst)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			for batch := range chunks(samples, benchBatch) {
				dst = enc.Encode(dst, batch)
			}
		}
		reportNsPerSample(b, len(samples))
		b.ReportMetric(float64(compressed)/float64(len(samples)), "wire-B/sample")
	}
	b.Run("v1-snappy", func(b *testing.B) { run(b, &encode.V1Encoder{}) })
	defer func(l zstd.EncoderLevel) { encode.VMLevel = l }(encode.VMLevel)
	for _, l := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression} {
		b.Run("vm-"+l.String(), func(b *testing.B) {
			encode.VMLevel = l
			run(b, &encode.VMEncoder{})
		})
	}
}
