package testenv

import "github.com/kube-state-push/kube-state-push/encode"

// KubeletSet is a set of series as a kubelet reader makes it: one series
// per name on node n1, each with its own sample time (1000).
func KubeletSet(names ...string) *encode.SeriesSet {
	var set encode.SeriesSet
	var b encode.LabelsBuilder
	for _, n := range names {
		b.Reset()
		b.Add(encode.MetricName, n)
		b.Add("node", "n1")
		b.AppendTo(&set, 1)
		set.Timestamps = append(set.Timestamps, 1000)
	}
	return &set
}
