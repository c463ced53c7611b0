package agent

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Bad custom_resource_state documents, inline and in a file, each with the
// error it must give: the file, the line and the key.
func TestCustomResourceStateBadConfigs(t *testing.T) {
	for name, want := range map[string]string{
		"custom_resource_state_path":        `custom_resource_state_path.bad.yaml:13: custom_resource_state.spec.resources[0].metrics[0].each.gauge.path: invalid list lookup: [Ready]`,
		"custom_resource_state_unknown_key": `custom_resource_state_unknown_key.bad.yaml:7: custom_resource_state.spec.resources[0].metric: unknown key`,
		"custom_resource_state_type":        `custom_resource_state_type.bad.yaml:10: custom_resource_state.spec.resources[0].metrics[0].each.type: unknown metric type summary`,
		"custom_resource_state_file":        `custom_resource_state_file.bad.yaml:3: custom_resource_state: custom_resource_state_file.crs.yaml:4: spec.resources[0].groupVersionKind.group: group is required in the defined GVK /v1, Kind=Widget`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadFile(filepath.Join("testdata", name+".bad.yaml"))
			require.Error(t, err)
			require.Equal(t, "testdata/"+want, err.Error())
		})
	}
}

// A good document loads, prints back in the effective configuration, and
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
