package customresource

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Bad documents give kube-state-metrics' messages, each under the key it
// is about.
func TestValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"list lookup in path", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - {name: a, help: h, each: {type: Gauge, gauge: {path: [status, conditions, "[Ready]"]}}}
`, `spec.resources[0].metrics[0].each.gauge.path: invalid list lookup: [Ready]`},
		{"list lookup in valueFrom", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - {name: a, help: h, each: {type: StateSet, stateSet: {labelName: s, valueFrom: ["[x]"]}}}
`, `spec.resources[0].metrics[0].each.stateSet.valueFrom: invalid list lookup: [x]`},
		{"list lookup in labelsFromPath", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      labelsFromPath: {bad: ["[y]"]}
      metrics:
        - {name: a, help: h, each: {type: Info, info: {labelsFromPath: {x: [a]}}}}
`, `spec.resources[0].metrics[0].labelsFromPath.bad: invalid list lookup: [y]`},
		{"unknown type", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - {name: a, help: h, each: {type: Counter}}
`, `spec.resources[0].metrics[0].each.type: unknown metric type counter`},
		{"type without its settings", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - {name: a, help: h, each: {type: Info}}
`, `spec.resources[0].metrics[0].each: expected each.info to not be nil`},
		{"no group", `
spec:
  resources:
    - groupVersionKind: {version: v1, kind: K}
      metrics: []
`, `spec.resources[0].groupVersionKind.group: group is required in the defined GVK /v1, Kind=K`},
		{"unknown key", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - {name: a, help: h, each: {type: Gauge, gauge: {path: [a], valuefrom: [b]}}}
`, `spec.resources[0].metrics[0].each.gauge.valuefrom: unknown key`},
		{"bad name", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - {name: a-b, help: h, each: {type: Gauge, gauge: {path: [a]}}}
`, `spec.resources[0].metrics[0].name: "kube_customresource_a-b" is not a valid metric name`},
		{"extension: unknown value type", `
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - {name: a, help: h, each: {type: Gauge, gauge: {path: [a], valueType: hours}}}
`, `spec.resources[0].metrics[0].each.gauge.valueType: unknown value type "hours" (known: duration)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			require.NoError(t, yaml.Unmarshal([]byte(tc.doc), &c))
			require.EqualError(t, c.Validate(), tc.want)
		})
	}
}

// A document in a file: read relative to the configuration's directory,
// errors naming the file, the line and the key.
func TestValidateFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crs.yaml"), []byte(`kind: CustomResourceStateMetrics
spec:
  resources:
    - groupVersionKind: {group: g.io, version: v1, kind: K}
      metrics:
        - name: a
          help: h
          each:
            type: Gauge
            gauge: {path: ["[x]"]}
`), 0o600))
	var c Config
	require.NoError(t, yaml.Unmarshal([]byte(`crs.yaml`), &c))
	c.SetDirectory(dir)
	require.EqualError(t, c.Validate(), `crs.yaml:10: spec.resources[0].metrics[0].each.gauge.path: invalid list lookup: [x]`)
	out, err := yaml.Marshal(c)
	require.NoError(t, err)
	require.Equal(t, "crs.yaml\n", string(out))

	c = Config{}
	require.NoError(t, yaml.Unmarshal([]byte(`missing.yaml`), &c))
	c.SetDirectory(dir)
	require.ErrorContains(t, c.Validate(), "reading the custom resource state document: open "+filepath.Join(dir, "missing.yaml"))
}
