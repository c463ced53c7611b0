package diskbuf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSegmentReader writes arbitrary bytes as the oldest segment, followed
// by a segment holding one good record. Reading must not panic, must return
// only a prefix of well-framed records whose CRC matches, and must then
// reach the good record.
func FuzzSegmentReader(f *testing.F) {
	good := appendFrame(appendFrame(nil, []byte("first")), bytes.Repeat([]byte("x"), 300))
	f.Add([]byte{})
	f.Add(good)
	f.Add(good[:len(good)-1])
	flipped := bytes.Clone(good)
	flipped[len(flipped)-10] ^= 1
	f.Add(flipped)
	f.Add(appendFrame(nil, nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x80})

	sentinel := []byte("sentinel")
	// One directory per fuzzing process, emptied for each input: a
	// t.TempDir per input costs more than the reading under test.
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultConfig
		cfg.Dir = filepath.Join(root, "buf")
		if err := os.RemoveAll(cfg.Dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(cfg.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.Sync = SyncNever // fsync would cap the run at a few hundred inputs a second
		if err := os.WriteFile(segmentPath(cfg.Dir, 1), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segmentPath(cfg.Dir, 2), appendFrame(nil, sentinel), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		off := 0
		for i := 0; ; i++ {
			rec, err := b.Peek()
			if errors.Is(err, ErrEmpty) {
				t.Fatal("the sentinel record after the fuzzed segment was never read")
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Ack(); err != nil {
				t.Fatal(err)
			}
			if off < 0 || off >= len(data) || i > len(data) {
				// Past the fuzzed segment: only the sentinel may follow.
				if !bytes.Equal(rec, sentinel) {
					t.Fatalf("record %d after the fuzzed segment is %q", i, rec)
				}
				break
			}
			n, k := binary.Uvarint(data[off:])
			body := off + k + crcLen
			if k <= 0 || body > len(data) || n != uint64(len(rec)) || n > uint64(len(data)-body) {
				if bytes.Equal(rec, sentinel) {
					break // the fuzzed segment ended in a bad frame
				}
				t.Fatalf("record %d at offset %d is not framed as read", i, off)
			}
			if !bytes.Equal(data[body:body+int(n)], rec) {
				if bytes.Equal(rec, sentinel) {
					break
				}
				t.Fatalf("record %d at offset %d differs from the file", i, off)
			}
			if crc32.Checksum(rec, castagnoli) != binary.BigEndian.Uint32(data[off+k:]) {
				t.Fatalf("record %d at offset %d returned with a bad CRC", i, off)
			}
			off = body + int(n)
			if off == len(data) {
				off = -1 // next must be the sentinel
			}
		}
		if _, err := b.Peek(); !errors.Is(err, ErrEmpty) {
			t.Fatalf("after the sentinel: %v, want ErrEmpty", err)
		}
	})
}
