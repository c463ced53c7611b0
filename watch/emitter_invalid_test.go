package watch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// A generated label name invalid in the legacy scheme, or a value that is
// not UTF-8, leaves its series out, counted; the other series of the family
// are rendered.
func TestEmitKVLeavesOutInvalidSeries(t *testing.T) {
	var set encode.SeriesSet
	e := &Emitter{out: &set}
	e.startFamily(0, "kube_foo_labels", 0)
	e.EmitKV(1, []string{"label_ok", "_x9"}, []string{"a", "b"})
	e.EmitKV(1, []string{"1abc"}, []string{"a"})
	e.EmitKV(1, []string{"ok", "bad-name"}, []string{"a", "b"})
	e.EmitKV(1, []string{"ok"}, []string{"\xff\xfe"})
	e.EmitKV(1, []string{"ok"}, []string{"é"})
	e.endFamilies()
	require.Equal(t, 2, set.Len())
	require.Equal(t, 3, e.invalid)

	for name, valid := range map[string]bool{
		"a": true, "_": true, "a1": true, "A_b": true, "": true,
		"1a": false, "a-b": false, "a.b": false, "é": false, "a:b": false,
	} {
		require.Equal(t, valid, validLabelName(name), name)
	}
}
