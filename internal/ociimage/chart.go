package ociimage

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// ChartImage is the image reference the Helm chart in dir renders with its
// default values, as its kube-state-push.image helper builds it: registry,
// repository, and the tag or else the chart's appVersion. It is not
// normalized.
func ChartImage(dir string) (string, error) {
	var values struct {
		Image struct {
			Registry   string `json:"registry"`
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := readYAML(filepath.Join(dir, "values.yaml"), &values); err != nil {
		return "", err
	}
	if err := readYAML(filepath.Join(dir, "Chart.yaml"), &chart); err != nil {
		return "", err
	}
	ref := values.Image.Repository
	if values.Image.Registry != "" {
		ref = values.Image.Registry + "/" + ref
	}
	tag := values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	if ref == "" || tag == "" {
		return "", fmt.Errorf("chart %s: no image.repository or appVersion", dir)
	}
	return ref + ":" + tag, nil
}

func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read chart: %w", err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
