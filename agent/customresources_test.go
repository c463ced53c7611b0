package agent

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Bad documents are in badConfigs (config_test.go). A good document loads, prints back in the effective configuration, and
// gives its families' HELP and type to the endpoints' metadata.
func TestCustomResourceStateConfig(t *testing.T) {
	cfg, err := LoadFile(filepath.Join("testdata", "custom_resource_state.yaml"))
	require.NoError(t, err)
	md := familyMetadata(cfg)
	require.Equal(t, encode.Metadata{Type: encode.TypeGauge, Help: "Replicas of the widget."}, md["kube_customresource_replicas"])
	require.Equal(t, encode.Metadata{Type: encode.TypeStateSet, Help: "Phase of the widget."}, md["kube_customresource_phase"])

	out, err := cfg.Effective()
	require.NoError(t, err)
	again, err := Load(out, "effective")
	require.NoError(t, err)
	require.Equal(t, cfg.CustomResourceState.Doc, again.CustomResourceState.Doc)
}
