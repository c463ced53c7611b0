package ociimage

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations on the layout's index.json entry that name the image on import.
const (
	// AnnotationImageName is what containerd's importer reads first.
	AnnotationImageName = "io.containerd.image.name"
	// AnnotationRefName is the OCI image layout's own name for a manifest.
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// epoch is every timestamp in the image, so that a digest depends only on
// the contents.
var epoch = time.Unix(0, 0).UTC()

// Platform is one image of the index: the static binary built for OS/Arch.
type Platform struct {
	OS   string
	Arch string
	// Binary is the path of the static binary on this machine.
	Binary string
}

// Spec says what to write.
type Spec struct {
	// Name is the fully qualified reference the image is imported under,
	// such as docker.io/library/kube-state-push:0.1.0 (see Normalize).
	Name      string
	Platforms []Platform
	// Entrypoint defaults to BinaryPath.
	Entrypoint []string
	// User is "uid:gid", numeric.
	User string
	// BinaryPath is where the binary lands in the image, such as
	// /kube-state-push.
	BinaryPath string
	// CACertificates is an optional path of a PEM bundle on this machine,
	// written to /etc/ssl/certs/ca-certificates.crt as distroless does, so
	// that the agent can verify receivers' certificates.
	CACertificates string
	// ExposedPorts such as "8080/tcp".
	ExposedPorts []string
	Labels       map[string]string
}

// caPath is where distroless keeps its bundle; Go's crypto/x509 reads it
// on Linux, and SSL_CERT_FILE points at it as in distroless.
const caPath = "/etc/ssl/certs/ca-certificates.crt"

func (s Spec) validate() error {
	if _, err := name.NewTag(s.Name, name.StrictValidation); err != nil {
		return fmt.Errorf("image name %q: want a fully qualified name with a tag, such as %s: %w", s.Name, Normalize(s.Name), err)
	}
	if len(s.Platforms) == 0 {
		return errors.New("no platforms")
	}
	seen := map[string]bool{}
	for _, p := range s.Platforms {
		if p.OS == "" || p.Arch == "" || p.Binary == "" {
			return fmt.Errorf("platform %+v: os, arch and binary are required", p)
		}
		key := p.OS + "/" + p.Arch
		if seen[key] {
			return fmt.Errorf("platform %s given twice", key)
		}
		seen[key] = true
	}
	if !strings.HasPrefix(s.BinaryPath, "/") || strings.HasSuffix(s.BinaryPath, "/") {
		return fmt.Errorf("binary path %q: want an absolute file path", s.BinaryPath)
	}
	if _, _, err := parseUser(s.User); err != nil {
		return err
	}
	return nil
}

// parseUser reads "uid:gid": numeric, so the kubelet can check runAsNonRoot
// without a passwd lookup.
func parseUser(u string) (uid, gid int, err error) {
	us, gs, ok := strings.Cut(u, ":")
	if !ok {
		return 0, 0, fmt.Errorf("user %q: want uid:gid", u)
	}
	uid, err1 := strconv.Atoi(us)
	gid, err2 := strconv.Atoi(gs)
	if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("user %q: want numeric uid:gid", u)
	}
	return uid, gid, nil
}

// Index builds the multi-arch index the layout holds, one image per
// platform in the order given.
func Index(s Spec) (v1.ImageIndex, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	var ca []byte
	if s.CACertificates != "" {
		var err error
		if ca, err = os.ReadFile(s.CACertificates); err != nil {
			return nil, fmt.Errorf("read CA certificates: %w", err)
		}
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range s.Platforms {
		img, err := platformImage(s, p, ca)
		if err != nil {
			return nil, fmt.Errorf("image for %s/%s: %w", p.OS, p.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: p.OS, Architecture: p.Arch},
			},
		})
	}
	return idx, nil
}

func platformImage(s Spec, p Platform, ca []byte) (v1.Image, error) {
	bin, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	uid, gid, _ := parseUser(s.User)
	layer, err := rootLayer(s.BinaryPath, bin, uid, gid, ca)
	if err != nil {
		return nil, err
	}
	entrypoint := s.Entrypoint
	if len(entrypoint) == 0 {
		entrypoint = []string{s.BinaryPath}
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if ca != nil {
		env = append(env, "SSL_CERT_FILE="+caPath)
	}
	var ports map[string]struct{}
	if len(s.ExposedPorts) > 0 {
		ports = map[string]struct{}{}
		for _, port := range s.ExposedPorts {
			ports[port] = struct{}{}
		}
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		OS:           p.OS,
		Architecture: p.Arch,
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint:   entrypoint,
			User:         s.User,
			Env:          env,
			WorkingDir:   homeDir,
			ExposedPorts: ports,
			Labels:       s.Labels,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "kube-state-push ociimage: " + s.BinaryPath,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	return img, nil
}
