package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	sigyaml "sigs.k8s.io/yaml"
)

// The custom resources of the custom resource tests: five CRDs, namespaced
// and cluster-scoped, one serving two versions, two of one group, whose
// objects exercise every metric type and path feature of
// kube-state-metrics' CustomResourceState (crsDocument).

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crsDocument is handed unchanged to kube-state-metrics
// (--custom-resource-state-config-file) and to the agent
// (custom_resource_state).
const crsDocument = `kind: CustomResourceStateMetrics
spec:
  resources:
    - groupVersionKind: {group: crs.example.com, version: v1, kind: Widget}
      commonLabels: {team: platform, tier: ""}
      labelsFromPath:
        name: [metadata, name]
        namespace: [metadata, namespace]
      metrics:
        - name: replicas
          help: Replicas of the widget.
          each: {type: Gauge, gauge: {path: [spec, replicas]}}
        - name: resources
          help: Quantities by resource.
          each: {type: Gauge, gauge: {path: [spec, resources], labelFromKey: resource}}
        - name: ready_ratio
          help: Percentage.
          each: {type: Gauge, gauge: {path: [status, readyRatio]}}
        - name: last_update_timestamp_seconds
          help: RFC 3339 time.
          each: {type: Gauge, gauge: {path: [status, lastUpdate]}}
        - name: paused
          help: Boolean.
          each: {type: Gauge, gauge: {path: [spec, paused]}}
        - name: condition
          help: Conditions by type.
          commonLabels: {team: conditions}
          each:
            type: Gauge
            gauge: {path: [status, conditions], valueFrom: [status], labelsFromPath: {type: [type], reason: [reason]}}
        - name: ready
          help: The Ready condition.
          each: {type: Gauge, gauge: {path: [status, conditions, "[type=Ready]", status]}}
        - name: observed_generation
          help: Missing is zero.
          each: {type: Gauge, gauge: {path: [status, observedGeneration], nilIsZero: true}}
        - name: observed_generation_set
          help: Missing is no series.
          each: {type: Gauge, gauge: {path: [status, observedGeneration]}}
        - name: node_weight
          help: List elements.
          each: {type: Gauge, gauge: {path: [status, nodes], valueFrom: [weight], labelsFromPath: {node: [name]}}}
        - name: last_node_weight
          help: Negative index.
          each: {type: Gauge, gauge: {path: [status, nodes, "-1", weight]}}
        - name: n2_weight
          help: List lookup.
          each: {type: Gauge, gauge: {path: [status, nodes, "[name=n2]", weight]}}
        - name: status
          help: valueFrom a key of the map at path.
          each: {type: Gauge, gauge: {path: [status], valueFrom: [readyRatio]}}
        - name: phase
          help: Phase as a state set.
          each: {type: StateSet, stateSet: {path: [status, phase], labelName: phase, list: [Pending, Running, Failed]}}
        - name: condition_status
          help: Conditions as state sets.
          each:
            type: StateSet
            stateSet: {path: [status, conditions], valueFrom: [status], labelName: status, list: ["True", "False", "Unknown"], labelsFromPath: {type: [type]}}
        - name: info
          help: Labels from paths and copied maps.
          each:
            type: Info
            info: {labelsFromPath: {version: [spec, version], "label_*": [metadata, labels], "*": [spec, tags]}}
        - name: resource_info
          help: Labels from map keys.
          each: {type: Info, info: {path: [spec, resources], labelFromKey: resource}}
    - groupVersionKind: {group: crs.example.com, version: v1, kind: Gadget}
      metricNamePrefix: crs_gadget
      labelsFromPath: {gadget: [metadata, name]}
      metrics:
        - name: sub_ready
          help: Nested maps.
          each: {type: Gauge, gauge: {path: [status, sub], labelFromKey: shard, valueFrom: [ready], labelsFromPath: {active: [active]}}}
        - name: size_bytes
          help: Binary quantity.
          each: {type: Gauge, gauge: {path: [spec, size]}}
        - name: enabled
          help: Boolean, missing is zero.
          each: {type: gauge, gauge: {path: [spec, enabled], nilIsZero: true}}
        - name: mode
          help: State from valueFrom.
          each: {type: stateset, stateSet: {path: [spec], valueFrom: [mode], labelName: mode, list: [a, b]}}
        - name: annotation_info
          help: Annotations by key.
          each: {type: info, info: {path: [metadata, annotations], labelFromKey: annotation}}
    - groupVersionKind: {group: other.example.com, version: "*", kind: Gizmo}
      metricNamePrefix: ""
      labelsFromPath: {gizmo: [metadata, name]}
      metrics:
        - name: gizmo_count
          help: Every served version, no prefix.
          each: {type: Gauge, gauge: {path: [spec, count]}}
    - groupVersionKind: {group: third.example.com, version: v1, kind: "*"}
      labelsFromPath: {name: [metadata, name]}
      metrics:
        - name: any_kind_size
          help: Every kind of the group.
          each: {type: Gauge, gauge: {path: [spec, size]}}
    # The same resource (v1) again: the last entry renders it, as
    # kube-state-metrics replaces the store of the earlier one.
    - groupVersionKind: {group: other.example.com, version: v1, kind: Gizmo}
      metricNamePrefix: ""
      labelsFromPath: {gizmo: [metadata, name]}
      metrics:
        - name: gizmo_again
          help: The same kind again.
          each: {type: Gauge, gauge: {path: [spec, count]}}
`

// crdObject is a CRD of the given scope serving versions (the first
// stored), whose objects take any fields.
func crdObject(group, kind, plural, scope string, versions ...string) *unstructured.Unstructured {
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{
			"name": v, "served": true, "storage": i == 0,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": scope, "versions": vs,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
		},
	}}
}

// createCRD creates a CRD and waits until it is established.
func createCRD(t *testing.T, ctx context.Context, dc dynamic.Interface, crd *unstructured.Unstructured) {
	t.Helper()
	_, err := dc.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, 30*time.Second, "CRD "+crd.GetName()+" established", func() error {
		u, err := dc.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("not established")
	})
}

// deleteCRD deletes a CRD (and so its objects) and waits until it is gone.
func deleteCRD(t *testing.T, ctx context.Context, dc dynamic.Interface, name string) {
	t.Helper()
	err := dc.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	require.NoError(t, err)
	eventually(t, time.Minute, "CRD "+name+" deleted", func() error {
		_, err := dc.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
}

// createObjects creates custom resources written as YAML documents.
func createObjects(t *testing.T, ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, docs ...string) {
	t.Helper()
	for _, d := range docs {
		j, err := sigyaml.YAMLToJSON([]byte(d))
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(j))
		_, err = dc.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err, "creating %s", u.GetName())
	}
}

var (
	widgetsGVR = schema.GroupVersionResource{Group: "crs.example.com", Version: "v1", Resource: "widgets"}
	gadgetsGVR = schema.GroupVersionResource{Group: "crs.example.com", Version: "v1", Resource: "gadgets"}
	gizmosGVR  = schema.GroupVersionResource{Group: "other.example.com", Version: "v1", Resource: "gizmos"}
)

// crsFixtures creates the CRDs and their objects in namespace ns.
func crsFixtures(t *testing.T, ctx context.Context, dc dynamic.Interface, ns string) {
	t.Helper()
	createCRD(t, ctx, dc, crdObject("crs.example.com", "Widget", "widgets", "Namespaced", "v1"))
	createCRD(t, ctx, dc, crdObject("crs.example.com", "Gadget", "gadgets", "Cluster", "v1"))
	createCRD(t, ctx, dc, crdObject("other.example.com", "Gizmo", "gizmos", "Namespaced", "v1", "v1alpha1"))
	createCRD(t, ctx, dc, crdObject("third.example.com", "Part", "parts", "Cluster", "v1"))
	createCRD(t, ctx, dc, crdObject("third.example.com", "Bolt", "bolts", "Cluster", "v1"))
	createObjects(t, ctx, dc, widgetsGVR, fmt.Sprintf(`
apiVersion: crs.example.com/v1
kind: Widget
metadata: {name: w1, namespace: %[1]s, labels: {app: shop, tier: web}}
spec:
  replicas: 3
  resources: {cpu: 500m, memory: 1Gi, gpu: "2"}
  paused: true
  version: "1.2.3"
  tags: {owner: alice, cost-center: cc7}
status:
  phase: Running
  readyRatio: "75%%"
  lastUpdate: "2026-11-30T12:00:00Z"
  observedGeneration: 4
  conditions:
    - {type: Ready, status: "True", reason: AllGood}
    - {type: Degraded, status: "False"}
    - {type: Progressing, status: Unknown, reason: Waiting}
  nodes: [{name: n1, weight: 2}, {name: n2, weight: 5.5}, {name: n3, weight: 1}]
`, ns), fmt.Sprintf(`
apiVersion: crs.example.com/v1
kind: Widget
metadata: {name: w2, namespace: %[1]s}
spec: {replicas: 0}
`, ns), fmt.Sprintf(`
apiVersion: crs.example.com/v1
kind: Widget
metadata: {name: w3, namespace: %[1]s, labels: {app: shop}}
spec: {replicas: 1, paused: false, resources: {cpu: "2"}}
status:
  phase: Failed
  readyRatio: "0.5"
  conditions: [{type: Ready, status: "False", reason: CrashLoop}]
  nodes: [{name: n2, weight: 3}]
`, ns))
	createObjects(t, ctx, dc, gadgetsGVR, `
apiVersion: crs.example.com/v1
kind: Gadget
metadata: {name: g1, annotations: {note: hello, owner: bob}}
spec: {size: 2Ki, enabled: yes, mode: b}
status:
  sub: {east: {active: 1, ready: 2}, west: {active: 0, ready: 4}}
`, `
apiVersion: crs.example.com/v1
kind: Gadget
metadata: {name: g2}
spec: {size: "1.5"}
`)
	createObjects(t, ctx, dc, schema.GroupVersionResource{Group: "third.example.com", Version: "v1", Resource: "parts"},
		"{apiVersion: third.example.com/v1, kind: Part, metadata: {name: p1}, spec: {size: 2}}")
	createObjects(t, ctx, dc, schema.GroupVersionResource{Group: "third.example.com", Version: "v1", Resource: "bolts"},
		"{apiVersion: third.example.com/v1, kind: Bolt, metadata: {name: b1}, spec: {size: 8}}")
	createObjects(t, ctx, dc, gizmosGVR, fmt.Sprintf(`
apiVersion: other.example.com/v1
kind: Gizmo
metadata: {name: z1, namespace: %[1]s}
spec: {count: 3}
`, ns), fmt.Sprintf(`
apiVersion: other.example.com/v1
kind: Gizmo
metadata: {name: z2, namespace: %[1]s}
spec: {count: "7"}
`, ns))
}
