package confkey

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestLine(t *testing.T) {
	var root yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("a: 1\nlist:\n  - x: 1\n    y: 2\n  - z: 3\n"), &root))
	for key, want := range map[string]int{
		"a": 1, "list": 2, "list[0].y": 4, "list[1]": 5, "list[1].z": 5,
		"list[7].q": 2, // the deepest part present
		"missing":   1,
	} {
		require.Equal(t, want, Line(&root, key), key)
	}
	require.Equal(t, 1, Line(nil, "a"))
}

func TestRegexps(t *testing.T) {
	res, err := Regexps("metric_allowlist", []string{"^kube_pod_.*", "kube_node"})
	require.NoError(t, err)
	require.Len(t, res, 2)
	require.True(t, res[1].MatchString("x_kube_node_info"), "unanchored")
	_, err = Regexps("metric_denylist", []string{"ok", "(bad"})
	var ke *Error
	require.True(t, errors.As(err, &ke))
	require.Equal(t, "metric_denylist[1]", ke.Key)
}
