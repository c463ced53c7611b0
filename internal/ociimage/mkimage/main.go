// Command mkimage writes the agent's image as an OCI image layout tar from
// binaries already built, one per platform: `make image` runs it.
//
//	go run ./internal/ociimage/mkimage -o bin/kube-state-push-image.tar \
//	    -binary linux/amd64=bin/linux-amd64/kube-state-push \
//	    -binary linux/arm64=bin/linux-arm64/kube-state-push
//
// The name defaults to what the Helm chart renders with its default values,
// made fully qualified, so that an imported image is the one the chart runs.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kube-state-push/kube-state-push/internal/ociimage"
)

type platforms []ociimage.Platform

func (p *platforms) String() string { return fmt.Sprint(*p) }

func (p *platforms) Set(v string) error {
	plat, bin, ok := strings.Cut(v, "=")
	osName, arch, ok2 := strings.Cut(plat, "/")
	if !ok || !ok2 || bin == "" {
		return fmt.Errorf("%q: want os/arch=path", v)
	}
	*p = append(*p, ociimage.Platform{OS: osName, Arch: arch, Binary: bin})
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		plats   platforms
		out     = flag.String("o", "bin/kube-state-push-image.tar", "the layout tar to write")
		image   = flag.String("image", "", "the image name; empty: what the chart in -chart renders by default")
		chart   = flag.String("chart", "deploy/helm/kube-state-push", "the Helm chart whose default image name is used")
		ca      = flag.String("ca-certificates", "", "a PEM bundle to install at /etc/ssl/certs/ca-certificates.crt; empty: none")
		version = flag.String("version", "", "the org.opencontainers.image.version label; empty: none")
	)
	flag.Var(&plats, "binary", "os/arch=path of a static binary; repeat for each platform")
	flag.Parse()
	if len(plats) == 0 {
		return errors.New("no -binary given")
	}
	name := *image
	if name == "" {
		var err error
		if name, err = ociimage.ChartImage(*chart); err != nil {
			return err
		}
	}
	labels := map[string]string{"org.opencontainers.image.title": "kube-state-push"}
	if *version != "" {
		labels["org.opencontainers.image.version"] = *version
	}
	spec := ociimage.Spec{
		Name:           ociimage.Normalize(name),
		Platforms:      plats,
		User:           "65532:65532",
		BinaryPath:     "/kube-state-push",
		CACertificates: *ca,
		ExposedPorts:   []string{"8080/tcp"},
		Labels:         labels,
	}
	idx, err := ociimage.Index(spec)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = ociimage.WriteIndex(w, idx, spec.Name)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, *out)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	fmt.Printf("%s: %s@%s\n", *out, spec.Name, digest)
	return nil
}
