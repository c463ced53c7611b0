package customresource

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-state-push/kube-state-push/watch"
)

// The extensions, which no kube-state-metrics document sets: constant
// values (kube-state-metrics #1762), nested labelFromKey (#2589) and
// duration values (#2625).
func TestExtensions(t *testing.T) {
	c := load(t, `
spec:
  resources:
    - groupVersionKind: {group: myteam.io, version: v1, kind: Foo}
      labelsFromPath: {name: [metadata, name]}
      metrics:
        - name: condition_present
          help: one per condition, whatever its status
          each: {type: Gauge, gauge: {path: [status, conditions], value: 1, labelsFromPath: {type: [type]}}}
        - name: resource_count
          help: nested maps
          each: {type: Gauge, gauge: {path: [status, resourceCount], labelsFromKeys: [tenant, host_group, resource_type]}}
        - name: retention_seconds
          help: a duration
          each: {type: Gauge, gauge: {path: [spec, retention], valueType: duration}}
`)
	obj := object(t, `
apiVersion: myteam.io/v1
kind: Foo
metadata: {name: foo, uid: u1}
spec: {retention: 2160h}
status:
  conditions: [{type: Ready, status: "False"}, {type: Synced}]
  resourceCount:
    tenantA: {hostGroupA: {type1: 2, type2: 20}}
    tenantB: {hostGroupB: {type1: 5}}
`)
	base := `customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo"`
	requireLines(t, `
kube_customresource_condition_present{`+base+`,type="Ready"} 1
kube_customresource_condition_present{`+base+`,type="Synced"} 1
kube_customresource_resource_count{customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",host_group="hostGroupA",name="foo",resource_type="type1",tenant="tenantA"} 2
kube_customresource_resource_count{customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",host_group="hostGroupA",name="foo",resource_type="type2",tenant="tenantA"} 20
kube_customresource_resource_count{customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",host_group="hostGroupB",name="foo",resource_type="type1",tenant="tenantB"} 5
kube_customresource_retention_seconds{`+base+`} 7776000
`, render(t, c, fooServed, obj))

	var bad Config
	require.NoError(t, yamlUnmarshal(`
spec:
  resources:
    - groupVersionKind: {group: myteam.io, version: v1, kind: Foo}
      metrics:
        - {name: a, help: h, each: {type: Gauge, gauge: {path: [a], labelFromKey: k, labelsFromKeys: [x]}}}
`, &bad))
	require.EqualError(t, bad.Validate(), "spec.resources[0].metrics[0].each.gauge.labelsFromKeys: labelFromKey and labelsFromKeys are mutually exclusive: set only one")
}

// labelSelector (extension, kube-state-metrics #2348) restricts the list and
// watch: only matching objects are rendered.
func TestLabelSelector(t *testing.T) {
	c := load(t, `
spec:
  resources:
    - groupVersionKind: {group: myteam.io, version: v1, kind: Foo}
      labelSelector: tier=web
      labelsFromPath: {name: [metadata, name]}
      metrics:
        - {name: replicas, help: h, each: {type: Gauge, gauge: {path: [spec, replicas]}}}
`)
	gvr := schema.GroupVersionResource{Group: "myteam.io", Version: "v1", Resource: "foos"}
	objs := []runtime.Object{
		object(t, `{apiVersion: myteam.io/v1, kind: Foo, metadata: {name: a, namespace: n, uid: ua, labels: {tier: web}}, spec: {replicas: 1}}`),
		object(t, `{apiVersion: myteam.io/v1, kind: Foo, metadata: {name: b, namespace: n, uid: ub, labels: {tier: db}}, spec: {replicas: 2}}`),
	}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "FooList"}, objs...)
	rs, _ := c.Resolve([]Served{fooServed})
	require.Len(t, rs, 1)
	items, err := rs[0].List(context.Background(), watch.Clients{Dynamic: dc}, "")
	require.NoError(t, err)
	var names []string
	for _, o := range items {
		names = append(names, o.(*unstructured.Unstructured).GetName())
	}
	require.Equal(t, []string{"a"}, names)
}

func yamlUnmarshal(s string, c *Config) error { return yaml.Unmarshal([]byte(s), c) }

// Values that do not render are counted, where kube-state-metrics logs
// them: a path that resolves to nothing (without nilIsZero), a value that
// is not a number, a state that is not a string.
func TestCountErrors(t *testing.T) {
	c := load(t, `
spec:
  resources:
    - groupVersionKind: {group: myteam.io, version: v1, kind: Foo}
      metrics:
        - {name: a, help: h, each: {type: Gauge, gauge: {path: [status, nope]}}}
        - {name: b, help: h, each: {type: Gauge, gauge: {path: [status, phase]}}}
        - {name: c, help: h, each: {type: StateSet, stateSet: {path: [spec, replicas], labelName: s, list: [x]}}}
        - {name: d, help: h, each: {type: Gauge, gauge: {path: [spec, replicas]}}}
`)
	counts := map[string]int{}
	c.CountErrors(func(resource string, n int) { counts[resource] += n })
	rs, _ := c.Resolve([]Served{fooServed})
	_, set, err := rs[0].NewRenderer(watch.RenderOptions{}).Render(object(t, fooObject))
	require.NoError(t, err)
	require.Equal(t, 1, set.Len(), "only d renders")
	require.Equal(t, map[string]int{"myteam.io/v1/foos": 3}, counts)
}
