//go:build amd64 && !purego

package encode

import "golang.org/x/sys/cpu"

// haveFast says appendSeriesFast can run here: its assembly copies with
// AVX's 32-byte loads and stores, which every amd64 server since about 2013
// has; without them AppendWriteRequest writes every series in Go.
var haveFast = cpu.X86.HasAVX

// fastRoom is the spare capacity appendSeriesFast needs in dst to start:
// it stores 64 bytes at a time, and stops where fewer than that are left.
const fastRoom = 2 * wideCopy

// fastSpan is the most samples AppendWriteRequest hands appendSeriesFast
// at once: about 45 µs of them at 22 ns a sample.
const fastSpan = 2048

// appendSeriesFast appends the TimeSeries of samples to dst as
// appendSeries does, from the first sample on, and stops before the first
// one it leaves to appendSeries (appendSeriesAsm says which). It returns
// dst with the series it wrote, and how many samples they are. dst must
// have at least fastRoom bytes of spare capacity, and haveFast be true.
func appendSeriesFast(dst []byte, samples []Sample, table [][]byte, ts *sampleTime) ([]byte, int) {
	n, done := appendSeriesAsm(dst, samples, table, ts)
	return dst[:n], done
}

// appendSeriesAsm is appendSeriesFast in assembly (writerequest_amd64.s):
// n is dst's length after the series it wrote, done their number.
//
//go:noescape
func appendSeriesAsm(dst []byte, samples []Sample, table [][]byte, ts *sampleTime) (n, done int)
