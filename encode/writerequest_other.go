//go:build !amd64 || purego

package encode

// haveFast says appendSeriesFast can run here: it is written for amd64
// only, and AppendWriteRequest writes every series in Go.
const haveFast = false

// fastRoom and fastSpan are appendSeriesFast's room and span; unused here.
const (
	fastRoom = 0
	fastSpan = 0
)

// appendSeriesFast writes nothing here.
func appendSeriesFast(dst []byte, _ []Sample, _ [][]byte, _ *sampleTime) ([]byte, int) {
	return dst, 0
}
