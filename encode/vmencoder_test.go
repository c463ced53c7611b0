package encode

import (
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// A VictoriaMetrics protocol body is the 1.0 request, zstd-compressed, in
// one frame that any zstd decoder reads.
func TestVMEncoderRoundTrip(t *testing.T) {
	samples := podSamples(t, 500)
	var e VMEncoder
	body := e.Encode(nil, samples)
	require.Equal(t, []byte{0x28, 0xb5, 0x2f, 0xfd}, body[:4], "zstd frame magic")
	d, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer d.Close()
	raw, err := d.DecodeAll(body, nil)
	require.NoError(t, err)
	require.Equal(t, AppendWriteRequest(nil, samples), raw)
	require.Equal(t, len(raw), e.RawLen())
	require.Equal(t, ContentTypeV1, e.ContentType())
	require.Equal(t, VersionVM, e.Version())

	v1 := (&V1Encoder{}).Encode(nil, samples)
	require.Less(t, len(body), len(v1)/2, "less than half of snappy 1.0")
}

// Once its buffers have grown, the encoder allocates nothing per request.
func TestVMEncoderAllocs(t *testing.T) {
	samples := podSamples(t, 2000)
	var e VMEncoder
	dst := e.Encode(nil, samples)
	dst = e.Encode(dst, samples)
	allocs := testing.AllocsPerRun(20, func() {
		dst = e.Encode(dst, samples)
	})
	require.Zero(t, allocs)
}
