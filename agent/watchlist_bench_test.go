package agent

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-state-push/kube-state-push/watch"
)

// BenchmarkWatchListSync is a start-up: a real client-go reflector syncs
// 10,000 pods from a streaming list (watch-list, as the API server serves
// it) into a series map. It reports, in live heap after a collection: what
// the reflector holds when it hands the list over to Replace; the peak,
// when Replace has stored the list that the reflector still holds (the
// agent's start-up peak, which the heap profile of the initial sync
// showed); and what the series map keeps once synced. "objects" hides the series map's transformer from
// the reflector, so the reflector holds the decoded pods until Replace, as
// it did before seriesMap had one; "series" is how the agent runs.
//
//	go test ./agent -run '^$' -bench WatchListSync -benchtime 3x
func BenchmarkWatchListSync(b *testing.B) {
	setWatchList(b, true)
	const n = 10_000
	r, ok := watch.Lookup("pods")
	require.True(b, ok)
	for _, v := range []struct {
		name  string
		plain bool
	}{{"objects", true}, {"series", false}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			var held, peak, kept uint64
			for b.Loop() {
				base := liveHeap()
				sm := newSeriesMap("pods", r.NewRenderer(watch.RenderOptions{}), slog.New(slog.DiscardHandler),
					newMetrics(prometheus.NewRegistry()).forResource("pods"))
				stored := make(chan struct{}, 1)
				store := &probeStore{ReflectorStore: sm, plain: v.plain,
					replaced: func([]any) { held = liveHeap() - base },
					stored: func([]any) {
						peak = liveHeap() - base
						select {
						case stored <- struct{}{}:
						default:
						}
					}}
				lw := newStreamLW(n, func(i int) k8sruntime.Object { return apiServerPod(i) }, func() k8sruntime.Object { return &v1.Pod{} })
				stop := runReflector(b, lw, &v1.Pod{}, store)
				<-stored
				stop()
				require.Equal(b, int32(1), lw.watchLists.Load(), "synced by watch-list")
				require.Zero(b, lw.lists.Load(), "never listed")
				kept = liveHeap() - base
				runtime.KeepAlive(sm)
			}
			b.ReportMetric(float64(held)/1e6, "MB-held-at-replace")
			b.ReportMetric(float64(peak)/1e6, "MB-peak")
			b.ReportMetric(float64(kept)/1e6, "MB-kept")
		})
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// apiServerPod is benchPod(i) as the API server returns it: with the
// managed fields that the deployment controller's create and the kubelet's
// status updates leave, which the heap profile of the initial sync showed
// among the largest parts of a decoded pod.
func apiServerPod(i int) *v1.Pod {
	p := benchPod(i)
	at := p.CreationTimestamp
	p.ResourceVersion = fmt.Sprint(1000 + i)
	p.GenerateName = p.Name[:len(p.Name)-5]
	var spec, status string
	for _, c := range p.Spec.Containers {
		spec += fmt.Sprintf(`"k:{\"name\":\"%s\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},`+
			`"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},`+
			`"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},`+
			`"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}},`, c.Name)
	}
	for _, ip := range p.Status.PodIPs {
		status += fmt.Sprintf(`"k:{\"ip\":\"%s\"}":{".":{},"f:ip":{}},`, ip.IP)
	}
	spec, status = strings.TrimSuffix(spec, ","), strings.TrimSuffix(status, ",")
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{
			Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:team":{}},` +
				`"f:annotations":{".":{},"f:prometheus.io/scrape":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"` + string(p.OwnerReferences[0].UID) + `\"}":{}}},` +
				`"f:spec":{"f:containers":{` + spec + `},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:priorityClassName":{},"f:restartPolicy":{},` +
				`"f:schedulerName":{},"f:securityContext":{},"f:serviceAccount":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{}}}`),
		},
		{
			Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},` +
				`"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},` +
				`"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},` +
				`"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},` +
				`"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},` + status + `},"f:startTime":{}}}`),
		},
	}
	return p
}
