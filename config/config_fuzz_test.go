package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary YAML to Load, seeded with the example config and
// every bad config. Load must not panic, must return a config or an error
// (never both, never neither), and a config it accepts must print.
func FuzzLoad(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.bad.yaml")
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, "../config.yaml")
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Load(data, "fuzz.yaml")
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Load returned config %v and error %v", cfg, err)
		}
		if cfg == nil {
			return
		}
		if _, err := cfg.Effective(); err != nil {
			t.Fatalf("Effective on an accepted config: %v", err)
		}
	})
}
