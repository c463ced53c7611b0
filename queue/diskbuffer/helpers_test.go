package diskbuffer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kube-state-push/kube-state-push/encode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// world is a fake cluster that changes a little from frame to frame, as
// the series maps do: objects added, values changed, labels changed (the
// old series go stale), objects removed (all their series go stale).
type world struct {
	rng  *rand.Rand
	objs map[uint64]*encode.SeriesSet
	keys []uint64
	// gen makes the labels of a relabelled series new.
	gen  int
	next uint64
	ts   int64
	// stale collects the series that ended since the last frame.
	stale []encode.Stale
}

func newWorld(seed uint64, objects int) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, 1)), objs: map[uint64]*encode.SeriesSet{}, ts: 1_700_000_000_000}
	for range objects {
		w.add()
	}
	return w
}

// series renders an object's set: n series named m_0.. with labels key
// and gen.
func series(key uint64, n, gen int, value func(i int) float64) *encode.SeriesSet {
	var b encode.LabelsBuilder
	set := &encode.SeriesSet{}
	for i := range n {
		b.Reset()
		b.Add(encode.MetricName, fmt.Sprintf("m_%d", i))
		b.Add("key", fmt.Sprintf("%x", key))
		if i == 0 {
			b.Add("gen", fmt.Sprint(gen))
		}
		b.AppendTo(set, value(i))
	}
	c := set.Clone()
	return &c
}

func (w *world) add() {
	w.next++
	k := w.next*0x9e3779b97f4a7c15 + 7
	w.objs[k] = series(k, 1+w.rng.IntN(12), 0, func(i int) float64 { return float64(i % 2) })
	w.keys = append(w.keys, k)
}

func (w *world) pick() (int, uint64) {
	i := w.rng.IntN(len(w.keys))
	return i, w.keys[i]
}

// step changes the world and returns its frame.
func (w *world) step() *encode.Frame {
	w.ts += 30_000
	for range 1 + w.rng.IntN(6) {
		switch op := w.rng.IntN(10); {
		case op < 2 || len(w.keys) < 3:
			w.add()
		case op < 6: // a value changes: same labels
			_, k := w.pick()
			old := w.objs[k]
			c := old.Clone()
			j := w.rng.IntN(len(c.Refs))
			c.Refs[j].Value = [...]float64{c.Refs[j].Value + 1, math.NaN(), math.Inf(-1), 0.25, -3, math.Copysign(0, -1)}[w.rng.IntN(6)]
			w.objs[k] = &c
		case op < 8: // a label changes: series 0 is new, the old one stale
			_, k := w.pick()
			old := w.objs[k]
			w.gen++
			w.objs[k] = series(k, len(old.Refs), w.gen, func(i int) float64 { return old.Refs[i].Value })
			w.stale = append(w.stale, encode.Stale{Hash: old.Refs[0].Hash, Labels: old.Labels(0)})
		default: // removed
			i, k := w.pick()
			old := w.objs[k]
			for j := range old.Refs {
				w.stale = append(w.stale, encode.Stale{Hash: old.Refs[j].Hash, Labels: old.Labels(j)})
			}
			delete(w.objs, k)
			w.keys = slices.Delete(w.keys, i, i+1)
		}
	}
	if w.rng.IntN(5) == 0 { // a series that came and went between frames
		w.stale = append(w.stale, encode.Stale{Hash: w.rng.Uint64(), Labels: []byte("\x0a\x06\x0a\x01a\x12\x01b")})
	}
	return w.frame()
}

func (w *world) frame() *encode.Frame {
	f := &encode.Frame{Timestamp: w.ts, Stale: w.stale}
	w.stale = nil
	for _, k := range w.keys {
		f.Objects = append(f.Objects, encode.Object{Key: k, Set: w.objs[k]})
	}
	w.rng.Shuffle(len(f.Objects), func(i, j int) { f.Objects[i], f.Objects[j] = f.Objects[j], f.Objects[i] })
	return f
}

// canon is a frame as a comparable value: per key its series (labels,
// hash, value bits) in order, and the stale series in order.
type canon struct {
	ts    int64
	objs  map[uint64][]string
	stale []string
}

func canonical(tb testing.TB, f *encode.Frame) canon {
	tb.Helper()
	c := canon{ts: f.Timestamp, objs: map[uint64][]string{}}
	for _, o := range f.Objects {
		_, dup := c.objs[o.Key]
		require.False(tb, dup, "key %x twice", o.Key)
		s := []string{}
		for i, r := range o.Set.Refs {
			require.LessOrEqual(tb, uint64(r.Off)+uint64(r.Len), uint64(len(o.Set.Buf)))
			b := binary.LittleEndian.AppendUint64(encode.AppendLabels(nil, o.Set.Labels(i)), r.Hash)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Value))
			if o.Set.Timestamps != nil {
				b = fmt.Appendf(b, " at %d", o.Set.Timestamps[i])
			}
			s = append(s, string(b))
		}
		c.objs[o.Key] = s
	}
	for _, s := range f.Stale {
		c.stale = append(c.stale, fmt.Sprintf("%q %x", encode.AppendLabels(nil, s.Labels), s.Hash))
	}
	return c
}

func testConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig
	cfg.Dir = t.TempDir()
	cfg.Sync = SyncNever
	return cfg
}

// smallParts is the record body size the log's tests also run with,
// which cuts their frames into records of an object or two (a world's
// object has up to 12 series of ~50 bytes of labels).
const smallParts = 200

// forEachPartSize runs test with frames stored as the first format stored
// them (at the tests' sizes, one record each) and cut into records of
// smallParts: the log behaves the same either way.
func forEachPartSize(t *testing.T, test func(t *testing.T, parts int)) {
	t.Helper()
	for _, parts := range []int{partBytes, smallParts} {
		t.Run(fmt.Sprintf("parts=%d", parts), func(t *testing.T) { test(t, parts) })
	}
}

// partConfig is testConfig with records of parts bytes of body.
func partConfig(t *testing.T, parts int) Config {
	t.Helper()
	cfg := testConfig(t)
	cfg.partBytes = parts
	return cfg
}

func mustOpen(t *testing.T, cfg Config) *Log {
	t.Helper()
	l, err := Open(cfg)
	require.NoError(t, err)
	return l
}

// reopen opens cfg's log again after l: closed, or with kill left as a
// killed process leaves it (its files as they are, l dropped unclosed).
func reopen(t *testing.T, l *Log, cfg Config, kill bool) *Log {
	t.Helper()
	if kill {
		t.Cleanup(func() { _ = l.Close() })
	} else {
		require.NoError(t, l.Close())
	}
	return mustOpen(t, cfg)
}

// recordList collects the records of the frames an encoder writes,
// unframed (as splitRecord takes them), and the segment bytes they make.
type recordList struct {
	// recs are the records, in order.
	recs [][]byte
	// segment is the records framed, back to back.
	segment []byte
}

func (r *recordList) writeRecord(framed []byte) error {
	body, n, _, err := frameAt(bytes.NewReader(framed), 0, int64(len(framed)))
	if err != nil {
		return err
	}
	if body+n != int64(len(framed)) {
		return fmt.Errorf("framed record of %d bytes holds %d", len(framed), body+n)
	}
	r.recs = append(r.recs, append([]byte(nil), framed[body:]...))
	r.segment = append(r.segment, framed...)
	return nil
}

// appendFrame appends rec framed as the log writes it.
func appendFrame(dst, rec []byte) []byte {
	b := append(make([]byte, maxFrameHeader, maxFrameHeader+len(rec)), rec...)
	return append(dst, frameInPlace(b, maxFrameHeader)...)
}
