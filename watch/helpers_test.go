package watch

import (
	"regexp"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// kube-state-metrics' sanitizer: every character a label name may not
// hold becomes one underscore.
var ksmInvalidLabelChar = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// sanitizeLabelName gives what kube-state-metrics' regular expression
// gives, for valid names (returned without a copy), extended resource
// names, non-ASCII and invalid UTF-8.
func FuzzSanitizeLabelName(f *testing.F) {
	for _, s := range []string{"", "cpu", "memory", "ephemeral_storage", "nvidia.com/gpu", "hugepages-2Mi",
		"example.com/föö", "\xff\xfe", "a\xc3", "日本", "_0aZ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := sanitizeLabelName(s)
		require.Equal(t, ksmInvalidLabelChar.ReplaceAllString(s, "_"), got)
		if got == s && s != "" {
			require.Equal(t, unsafe.StringData(s), unsafe.StringData(got), "a valid name is not copied")
		}
	})
}
