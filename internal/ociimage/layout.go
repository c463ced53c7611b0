package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteLayoutTar writes s as an OCI image layout in one tar stream: the
// oci-layout marker, index.json naming the multi-arch index s.Name, and
// every blob under blobs/sha256.
func WriteLayoutTar(w io.Writer, s Spec) error {
	idx, err := Index(s)
	if err != nil {
		return err
	}
	return WriteIndex(w, idx, s.Name)
}

// WriteIndex writes idx (from Index) as WriteLayoutTar does, named ref, for
// callers that also want the index's digest.
func WriteIndex(w io.Writer, idx v1.ImageIndex, ref string) error {
	blobs := map[v1.Hash]func() (io.ReadCloser, error){}
	if err := collectIndex(idx, blobs); err != nil {
		return err
	}
	desc, err := descriptor(idx)
	if err != nil {
		return err
	}
	desc.Annotations = map[string]string{AnnotationImageName: ref, AnnotationRefName: ref}
	top, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{desc},
	})
	if err != nil {
		return fmt.Errorf("encode index.json: %w", err)
	}

	tw := tar.NewWriter(w)
	if err := writeFile(tw, "oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := writeFile(tw, "index.json", top); err != nil {
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch}); err != nil {
			return fmt.Errorf("write %s: %w", dir, err)
		}
	}
	hashes := make([]v1.Hash, 0, len(blobs))
	for h := range blobs {
		hashes = append(hashes, h)
	}
	sort.Slice(hashes, func(i, j int) bool { return hashes[i].Hex < hashes[j].Hex })
	for _, h := range hashes {
		if err := writeBlob(tw, h, blobs[h]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close layout tar: %w", err)
	}
	return nil
}

// collectIndex records the index's own manifest and, for each image in it,
// the manifest, config and layers.
func collectIndex(idx v1.ImageIndex, blobs map[v1.Hash]func() (io.ReadCloser, error)) error {
	if err := addRaw(blobs, idx.Digest, idx.RawManifest); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return fmt.Errorf("image %s: %w", d.Digest, err)
		}
		if err := addRaw(blobs, img.Digest, img.RawManifest); err != nil {
			return fmt.Errorf("image %s: %w", d.Digest, err)
		}
		if err := addRaw(blobs, img.ConfigName, img.RawConfigFile); err != nil {
			return fmt.Errorf("image %s config: %w", d.Digest, err)
		}
		layers, err := img.Layers()
		if err != nil {
			return fmt.Errorf("image %s layers: %w", d.Digest, err)
		}
		for _, l := range layers {
			h, err := l.Digest()
			if err != nil {
				return fmt.Errorf("image %s layer: %w", d.Digest, err)
			}
			blobs[h] = l.Compressed
		}
	}
	return nil
}

func addRaw(blobs map[v1.Hash]func() (io.ReadCloser, error), digest func() (v1.Hash, error), raw func() ([]byte, error)) error {
	h, err := digest()
	if err != nil {
		return err
	}
	b, err := raw()
	if err != nil {
		return err
	}
	blobs[h] = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return nil
}

func descriptor(idx v1.ImageIndex) (v1.Descriptor, error) {
	d, err := idx.Digest()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("index digest: %w", err)
	}
	size, err := idx.Size()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("index size: %w", err)
	}
	mt, err := idx.MediaType()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("index media type: %w", err)
	}
	return v1.Descriptor{MediaType: mt, Size: size, Digest: d}, nil
}

func writeFile(tw *tar.Writer, name string, b []byte) error {
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: epoch}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := tw.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// writeBlob copies one blob whole (tar needs its size before its bytes, and
// layers are compressed on read) after checking it still has its digest: a
// compressor that gave other bytes on a second read would otherwise leave
// an image that fails on import.
func writeBlob(tw *tar.Writer, h v1.Hash, open func() (io.ReadCloser, error)) error {
	rc, err := open()
	if err != nil {
		return fmt.Errorf("open blob %s: %w", h, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("read blob %s: %w", h, err)
	}
	if sum := sha256.Sum256(b); h.Algorithm != "sha256" || hex.EncodeToString(sum[:]) != h.Hex {
		return fmt.Errorf("blob %s: its bytes have digest sha256:%x", h, sum)
	}
	return writeFile(tw, "blobs/"+h.Algorithm+"/"+h.Hex, b)
}
