package diskbuffer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-state-push/kube-state-push/encode"
)

// checkFrameRefs fails the test for a frame with series out of range.
func checkFrameRefs(t *testing.T, f *encode.Frame) {
	t.Helper()
	for _, o := range f.Objects {
		if o.Set == nil {
			t.Fatal("object without a set")
		}
		for i, r := range o.Set.Refs {
			if uint64(r.Off)+uint64(r.Len) > uint64(len(o.Set.Buf)) {
				t.Fatalf("object %x series %d: labels [%d:+%d] past a buffer of %d", o.Key, i, r.Off, r.Len, len(o.Set.Buf))
			}
			_ = o.Set.Labels(i)
		}
	}
	if f.Samples() < len(f.Stale) {
		t.Fatal("negative sample count")
	}
}

// fuzzRecords are good records to start from: a keyframe and deltas, as
// records and as a segment, and a segment of the same frames each cut
// into records of a few objects (parts).
func fuzzRecords() (key []byte, deltas [][]byte, segment, parts []byte) {
	w := newWorld(11, 6)
	enc, small := newEncoder(), newEncoder()
	small.partBytes = 150
	var one, many recordList
	f := w.frame()
	_ = enc.keyframe(f, &one)
	_ = small.keyframe(f, &many)
	for range 4 {
		f := w.step()
		_ = enc.delta(f, &one)
		_ = small.delta(f, &many)
	}
	return one.recs[0], one.recs[1:], one.segment, many.segment
}

// FuzzFrameReader feeds arbitrary bytes to the reader. With a first byte
// of 0, the rest is one record decoded on top of a known state (after a
// good keyframe); otherwise it is a segment's bytes (frames of one record
// or of several), followed by a good segment that must still be read. Nothing may panic, and no frame handed
// out may have series out of its buffer's range.
func FuzzFrameReader(f *testing.F) {
	key, deltas, segment, parts := fuzzRecords()
	f.Add(append([]byte{0}, key...))
	for _, d := range deltas {
		f.Add(append([]byte{0}, d...))
	}
	f.Add(append([]byte{1}, segment...))
	f.Add(append([]byte{1}, segment[:len(segment)-5]...))
	f.Add(append([]byte{1}, parts...))
	f.Add(append([]byte{1}, parts[:len(parts)*2/3]...))
	f.Add([]byte{1})
	f.Add([]byte{0, formatVersion, kindDelta, 0, 0, 0})
	// Lengths asking for ~32 GiB: of a frame, and of a record's body.
	f.Add(append([]byte{1}, hugeFrameHeader()...))
	f.Add(append([]byte{0}, hugeBodyRecord(64)...))

	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		if data[0] == 0 {
			fuzzRecord(t, key, data[1:])
			return
		}
		fuzzSegment(t, filepath.Join(root, "log"), data[1:], key)
	})
}

func fuzzRecord(t *testing.T, key, rec []byte) {
	d := newDecoder()
	h, body, err := splitRecord(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.apply(h, body, nil); err != nil {
		t.Fatal(err)
	}
	h, body, err = splitRecord(rec)
	if err != nil {
		return
	}
	var fr encode.Frame
	if err := d.apply(h, body, &fr); err != nil {
		if !isCorrupt(err) {
			t.Fatalf("not a corruption error: %v", err)
		}
		return
	}
	checkFrameRefs(t, &fr)
}

func fuzzSegment(t *testing.T, dir string, data, sentinel []byte) {
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), data, 0o600); err != nil {
		t.Fatal(err)
	}
	good := appendFrame(nil, sentinel)
	if err := os.WriteFile(filepath.Join(dir, segmentName(2)), good, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig
	cfg.Dir = dir
	cfg.Sync = "never"
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var last Info
	for {
		fr, info, err := l.Next()
		if errors.Is(err, ErrEmpty) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		checkFrameRefs(t, fr)
		last = info
		if err := l.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	if !last.Keyframe {
		t.Fatal("the good segment after the fuzzed one was not read to its keyframe")
	}
}
