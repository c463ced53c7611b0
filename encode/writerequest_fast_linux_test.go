//go:build linux

package encode

import (
	"bytes"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// guarded returns n bytes that end where an unreadable page begins: a read
// or write past them faults, and the test binary dies of it.
func guarded(t *testing.T, n int) []byte {
	page := os.Getpagesize()
	size := (n + page - 1) / page * page
	mem := guardedMapping(t, size, page, false)
	return mem[size-n : size : size]
}

// guardedMapping maps size readable bytes and guard unreadable ones, both
// whole pages, the guard after the readable ones or, if first, before
// them; it returns the readable ones.
func guardedMapping(t *testing.T, size, guard int, first bool) []byte {
	t.Helper()
	mem, err := syscall.Mmap(-1, 0, size+guard, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	if first {
		require.NoError(t, syscall.Mprotect(mem[:guard], syscall.PROT_NONE))
		return mem[guard:]
	}
	require.NoError(t, syscall.Mprotect(mem[size:], syscall.PROT_NONE))
	return mem[:size]
}

// TestAppendSeriesFastStaysInsideItsSlices runs AppendWriteRequest on each
// series of every form the assembly writes with its labels' capacity, and
// dst's, ending at an unreadable page: the 64-byte copies and the moves of
// one-byte lengths may go past an element, but never past a capacity.
func TestAppendSeriesFastStaysInsideItsSlices(t *testing.T) {
	for i, s := range fastFormSamples(t) {
		all := s.Labels[:cap(s.Labels)]
		mem := guarded(t, len(all))
		copy(mem, all)
		g := Sample{Labels: mem[:len(s.Labels)], Value: s.Value, Timestamp: s.Timestamp}
		want := appendSeriesGo(nil, []Sample{s, s})
		// dst's capacity from half the request (it must grow) to fastRoom
		// more than all of it, each ending at the page.
		dstMem := guarded(t, len(want)+fastRoom)
		for room := len(want) / 2; room <= len(dstMem); room++ {
			got := AppendWriteRequest(dstMem[len(dstMem)-room:][:0], []Sample{g, g})
			require.True(t, bytes.Equal(want, got), "series %d, room %d", i, room)
		}
	}
}

// TestAppendSeriesFastRefusesReferencesBeforeItsLabels: a shared reference
// whose distance goes back past the labels' start is left to appendSeries,
// which refuses it, without the assembly reading there: the labels start
// where 16 KiB of unreadable pages (more than a two-byte distance reaches)
// end.
func TestAppendSeriesFastRefusesReferencesBeforeItsLabels(t *testing.T) {
	page := os.Getpagesize()
	mem := guardedMapping(t, page, (maxShared2+page-1)/page*page, true)
	good := fastFormSamples(t)[0]
	for _, dist := range []uint64{3, 64, 200, maxShared2 - 1} {
		labels := mem[:2:2]
		copy(labels, appendRef(nil, refShared, dist))
		samples := []Sample{good, {Labels: labels, Value: 1, Timestamp: good.Timestamp}}
		require.Panics(t, func() { AppendWriteRequest(make([]byte, 0, 4096), samples) }, "distance %d", dist)
	}
}
