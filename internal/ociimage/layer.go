package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// homeDir is the nonroot user's home, and the working directory, as in
// distroless' nonroot images.
const homeDir = "/home/nonroot"

// The users distroless/static ships: root, nobody, and nonroot (65532).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n"
)

type entry struct {
	mode     int64
	uid, gid int
	data     []byte // nil for a directory
}

// rootLayer is the image's only layer: the binary, the passwd and group
// files, a writable /tmp, the user's home and the optional CA bundle.
func rootLayer(binaryPath string, bin []byte, uid, gid int, ca []byte) (v1.Layer, error) {
	files := map[string]entry{
		"etc/passwd":                        {mode: 0o644, data: []byte(passwd)},
		"etc/group":                         {mode: 0o644, data: []byte(group)},
		"tmp":                               {mode: 0o1777},
		strings.TrimPrefix(homeDir, "/"):    {mode: 0o700, uid: uid, gid: gid},
		strings.TrimPrefix(binaryPath, "/"): {mode: 0o755, data: bin},
	}
	if ca != nil {
		files[strings.TrimPrefix(caPath, "/")] = entry{mode: 0o644, data: ca}
	}
	b, err := tarFiles(files)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// tarFiles writes files, and the directories that hold them, in name order
// with fixed times and owners.
func tarFiles(files map[string]entry) ([]byte, error) {
	for name := range files {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, ok := files[dir]; !ok {
				files[dir] = entry{mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		e := files[name]
		h := &tar.Header{
			Name:    name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close layer: %w", err)
	}
	return buf.Bytes(), nil
}
