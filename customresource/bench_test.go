package customresource

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/watch"
)

// benchDocument renders a Widget like the compatibility test's: 15
// families, about as many series per object as a Deployment's 18
// families render.
const benchDocument = `
spec:
  resources:
    - groupVersionKind: {group: crs.example.com, version: v1, kind: Widget}
      labelsFromPath: {name: [metadata, name], namespace: [metadata, namespace]}
      metrics:
        - {name: replicas, help: h, each: {type: Gauge, gauge: {path: [spec, replicas]}}}
        - {name: resources, help: h, each: {type: Gauge, gauge: {path: [spec, resources], labelFromKey: resource}}}
        - {name: ready_ratio, help: h, each: {type: Gauge, gauge: {path: [status, readyRatio]}}}
        - {name: last_update, help: h, each: {type: Gauge, gauge: {path: [status, lastUpdate]}}}
        - {name: paused, help: h, each: {type: Gauge, gauge: {path: [spec, paused]}}}
        - {name: condition, help: h, each: {type: Gauge, gauge: {path: [status, conditions], valueFrom: [status], labelsFromPath: {type: [type], reason: [reason]}}}}
        - {name: ready, help: h, each: {type: Gauge, gauge: {path: [status, conditions, "[type=Ready]", status]}}}
        - {name: observed_generation, help: h, each: {type: Gauge, gauge: {path: [status, observedGeneration], nilIsZero: true}}}
        - {name: node_weight, help: h, each: {type: Gauge, gauge: {path: [status, nodes], valueFrom: [weight], labelsFromPath: {node: [name]}}}}
        - {name: phase, help: h, each: {type: StateSet, stateSet: {path: [status, phase], labelName: phase, list: [Pending, Running, Failed]}}}
        - {name: condition_status, help: h, each: {type: StateSet, stateSet: {path: [status, conditions], valueFrom: [status], labelName: status, list: ["True", "False", "Unknown"], labelsFromPath: {type: [type]}}}}
        - {name: info, help: h, each: {type: Info, info: {labelsFromPath: {version: [spec, version], "label_*": [metadata, labels]}}}}
        - {name: resource_info, help: h, each: {type: Info, info: {path: [spec, resources], labelFromKey: resource}}}
        - {name: created, help: h, each: {type: Gauge, gauge: {path: [metadata, creationTimestamp]}}}
        - {name: generation, help: h, each: {type: Gauge, gauge: {path: [metadata, generation]}}}
`

const benchObject = `
apiVersion: crs.example.com/v1
kind: Widget
metadata: {name: w1, namespace: shop, uid: 9f1c, generation: 4, creationTimestamp: "2026-11-30T12:00:00Z", labels: {app: shop, tier: web}}
spec:
  replicas: 3
  resources: {cpu: 500m, memory: 1Gi, gpu: "2"}
  paused: true
  version: "1.2.3"
status:
  phase: Running
  readyRatio: "75%"
  lastUpdate: "2026-11-30T12:00:00Z"
  observedGeneration: 4
  conditions:
    - {type: Ready, status: "True", reason: AllGood}
    - {type: Degraded, status: "False"}
    - {type: Progressing, status: Unknown, reason: Waiting}
  nodes: [{name: n1, weight: 2}, {name: n2, weight: 5.5}, {name: n3, weight: 1}]
`

// BenchmarkRenderCustomResource is the cost of one custom resource event:
// rendering the decoded object into series.
func BenchmarkRenderCustomResource(b *testing.B) {
	c := load(b, benchDocument)
	rs, _ := c.Resolve([]Served{{GVK: GroupVersionKind{Group: "crs.example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets", Namespaced: true}})
	rr := rs[0].NewRenderer(watch.RenderOptions{})
	obj := object(b, benchObject)
	_, set, err := rr.Render(obj)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, set, _ = rr.Render(obj)
	}
	b.ReportMetric(float64(set.Len()), "series/op")
}

// BenchmarkRenderDeployment is the same for a built-in resource of about
// as many series: a Deployment with conditions, labels and owners.
func BenchmarkRenderDeployment(b *testing.B) {
	r, _ := watch.Lookup("deployments")
	rr := r.NewRenderer(watch.RenderOptions{})
	now := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "shop", UID: "9f1c", Generation: 4, CreationTimestamp: now,
			Labels: map[string]string{"app": "shop", "tier": "web"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Paused: true,
			Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{}},
			Template: corev1.PodTemplateSpec{}},
		Status: appsv1.DeploymentStatus{Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 3, ObservedGeneration: 4,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			}},
	}
	_, set, err := rr.Render(d)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, set, _ = rr.Render(d)
	}
	b.ReportMetric(float64(set.Len()), "series/op")
}
