package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/require"
)

const testName = "registry.example.com/team/kube-state-push:v1.2.3"

// testSpec has two fake binaries whose bytes say which platform they are.
func testSpec(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	var plats []Platform
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, arch)
		require.NoError(t, os.WriteFile(bin, []byte("\x7fELF binary for "+arch), 0o755))
		plats = append(plats, Platform{OS: "linux", Arch: arch, Binary: bin})
	}
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644))
	return Spec{
		Name:           testName,
		Platforms:      plats,
		User:           "65532:65532",
		BinaryPath:     "/kube-state-push",
		CACertificates: ca,
		ExposedPorts:   []string{"8080/tcp"},
		Labels:         map[string]string{"org.opencontainers.image.title": "kube-state-push"},
	}
}

func writeTar(t *testing.T, s Spec) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteLayoutTar(&buf, s))
	return buf.Bytes()
}

// untar extracts a layout tar, refusing anything but plain files and
// directories inside dir.
func untar(t *testing.T, b []byte) string {
	t.Helper()
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		require.NoError(t, err)
		require.True(t, filepath.IsLocal(h.Name), h.Name)
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(p, 0o755))
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, data, 0o644))
		default:
			t.Fatalf("%s: unexpected type %c", h.Name, h.Typeflag)
		}
	}
}

// layerFiles reads an image's only layer into headers and contents by name.
func layerFiles(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	mt, err := layers[0].MediaType()
	require.NoError(t, err)
	require.Equal(t, types.OCILayer, mt)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	headers, data := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, data
		}
		require.NoError(t, err)
		headers[h.Name] = h
		data[h.Name], err = io.ReadAll(tr)
		require.NoError(t, err)
	}
}

func TestWriteLayoutTar(t *testing.T) {
	s := testSpec(t)
	dir := untar(t, writeTar(t, s))

	marker, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
	require.NoError(t, err)
	require.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(marker))

	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	topManifest, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, topManifest.Manifests, 1)
	named := topManifest.Manifests[0]
	require.Equal(t, types.OCIImageIndex, named.MediaType)
	require.Equal(t, map[string]string{AnnotationImageName: testName, AnnotationRefName: testName}, named.Annotations)

	idx, err := top.ImageIndex(named.Digest)
	require.NoError(t, err)
	require.NoError(t, validate.Index(idx), "every blob present, with its digest and size")
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 2)

	for i, arch := range []string{"amd64", "arm64"} {
		d := im.Manifests[i]
		require.Equal(t, types.OCIManifestSchema1, d.MediaType)
		require.Equal(t, &v1.Platform{OS: "linux", Architecture: arch}, d.Platform)
		img, err := idx.Image(d.Digest)
		require.NoError(t, err)
		cfgType, err := img.Manifest()
		require.NoError(t, err)
		require.Equal(t, types.OCIConfigJSON, cfgType.Config.MediaType)

		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, "linux", cfg.OS)
		require.Equal(t, arch, cfg.Architecture)
		require.Equal(t, "65532:65532", cfg.Config.User)
		require.Equal(t, []string{"/kube-state-push"}, cfg.Config.Entrypoint)
		require.Empty(t, cfg.Config.Cmd)
		require.Equal(t, "/home/nonroot", cfg.Config.WorkingDir)
		require.Contains(t, cfg.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
		require.Equal(t, map[string]struct{}{"8080/tcp": {}}, cfg.Config.ExposedPorts)
		require.Equal(t, "kube-state-push", cfg.Config.Labels["org.opencontainers.image.title"])
		require.Equal(t, int64(0), cfg.Created.Unix())

		headers, data := layerFiles(t, img)
		bin := headers["kube-state-push"]
		require.NotNil(t, bin, "the binary at /kube-state-push")
		require.Equal(t, int64(0o755), bin.Mode)
		require.Equal(t, "\x7fELF binary for "+arch, string(data["kube-state-push"]))
		require.Contains(t, string(data["etc/passwd"]), "nonroot:x:65532:65532:")
		require.Equal(t, "-----BEGIN CERTIFICATE-----\n", string(data["etc/ssl/certs/ca-certificates.crt"]))
		home := headers["home/nonroot/"]
		require.NotNil(t, home)
		require.Equal(t, 65532, home.Uid)
		require.Equal(t, 65532, home.Gid)
		require.Equal(t, int64(0o1777), headers["tmp/"].Mode)
		for name, h := range headers {
			require.Equal(t, int64(0), h.ModTime.Unix(), name)
		}
	}
}

func TestWriteLayoutTarIsDeterministic(t *testing.T) {
	s := testSpec(t)
	first := writeTar(t, s)
	require.Equal(t, first, writeTar(t, s), "the same inputs give the same bytes")

	idx1, err := Index(s)
	require.NoError(t, err)
	d1, err := idx1.Digest()
	require.NoError(t, err)
	idx2, err := Index(s)
	require.NoError(t, err)
	d2, err := idx2.Digest()
	require.NoError(t, err)
	require.Equal(t, d1, d2)

	var top v1.IndexManifest
	require.NoError(t, json.Unmarshal(fileInTar(t, first, "index.json"), &top))
	require.Equal(t, d1, top.Manifests[0].Digest, "index.json names the index Index builds")

	require.NoError(t, os.WriteFile(s.Platforms[1].Binary, []byte("another arm64 build"), 0o755))
	idx3, err := Index(s)
	require.NoError(t, err)
	d3, err := idx3.Digest()
	require.NoError(t, err)
	require.NotEqual(t, d1, d3, "another binary gives another digest")
}

func fileInTar(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		require.NoError(t, err, "no %s in the tar", name)
		if h.Name == name {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			return data
		}
	}
}

func TestWriteLayoutTarRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*Spec)
		want   string
	}{
		"short name":       {func(s *Spec) { s.Name = "kube-state-push:0.1.0" }, "docker.io/library/kube-state-push:0.1.0"},
		"no tag":           {func(s *Spec) { s.Name = "registry.example.com/kube-state-push" }, "with a tag"},
		"no platforms":     {func(s *Spec) { s.Platforms = nil }, "no platforms"},
		"platform twice":   {func(s *Spec) { s.Platforms[1].Arch = "amd64" }, "linux/amd64 given twice"},
		"relative binary":  {func(s *Spec) { s.BinaryPath = "kube-state-push" }, "absolute file path"},
		"named user":       {func(s *Spec) { s.User = "nonroot" }, "want uid:gid"},
		"missing binary":   {func(s *Spec) { s.Platforms[0].Binary += ".missing" }, "read binary"},
		"missing CA file":  {func(s *Spec) { s.CACertificates += ".missing" }, "read CA certificates"},
		"non-numeric user": {func(s *Spec) { s.User = "a:b" }, "numeric"},
	} {
		t.Run(name, func(t *testing.T) {
			s := testSpec(t)
			tc.change(&s)
			err := WriteLayoutTar(io.Discard, s)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"kube-state-push:0.1.0":                  "docker.io/library/kube-state-push:0.1.0",
		"kube-state-push":                        "docker.io/library/kube-state-push:latest",
		"team/kube-state-push:v1":                "docker.io/team/kube-state-push:v1",
		"docker.io/kube-state-push:v1":           "docker.io/library/kube-state-push:v1",
		"ghcr.io/org/kube-state-push:v0.1.0":     "ghcr.io/org/kube-state-push:v0.1.0",
		"localhost/kube-state-push:v1":           "localhost/kube-state-push:v1",
		"registry.example.com:5000/ksp":          "registry.example.com:5000/ksp:latest",
		"registry.example.com:5000/ksp:v2":       "registry.example.com:5000/ksp:v2",
		"quay.io/org/ksp@sha256:0123456789abcde": "quay.io/org/ksp@sha256:0123456789abcde",
	} {
		require.Equal(t, want, Normalize(in), in)
	}
}

func TestChartImage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("Chart.yaml", "name: x\nappVersion: \"1.4.0\"\n")
	write("values.yaml", "image:\n  registry: \"\"\n  repository: kube-state-push\n  tag: \"\"\n")
	got, err := ChartImage(dir)
	require.NoError(t, err)
	require.Equal(t, "kube-state-push:1.4.0", got)

	write("values.yaml", "image:\n  registry: ghcr.io\n  repository: org/kube-state-push\n  tag: v2\n")
	got, err = ChartImage(dir)
	require.NoError(t, err)
	require.Equal(t, "ghcr.io/org/kube-state-push:v2", got)

	_, err = ChartImage(t.TempDir())
	require.ErrorContains(t, err, "read chart")
}
