package testenv

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseExposition(t *testing.T) {
	got, err := ParseExposition(`# HELP kube_pod_info [STABLE] Information about pod.
# TYPE kube_pod_info gauge
kube_pod_info{namespace="a",pod="p",host_ip="",note="say \"hi\"\nnow",path="C:\\x"} 1
kube_node_created{node="n"} 1.5e+09
up 0
weird{a="1"} NaN
`)
	require.NoError(t, err)
	require.Len(t, got, 4)
	require.Equal(t, 1.0, got[`kube_pod_info{namespace="a",note="say \"hi\"\nnow",path="C:\\x",pod="p"}`])
	require.Equal(t, 1.5e9, got[`kube_node_created{node="n"}`])
	require.Equal(t, 0.0, got[`up{}`])
	require.True(t, math.IsNaN(got[`weird{a="1"}`]))

	_, err = ParseExposition("a{b=\"1\"} 1\na{b=\"1\"} 2\n")
	require.ErrorContains(t, err, "appears twice")
	_, err = ParseExposition("a{b=\"1} 1\n")
	require.Error(t, err)
}
