package customresource

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/watch"
)

// load parses and validates a document given inline.
func load(t testing.TB, doc string) *Config {
	t.Helper()
	var c Config
	require.NoError(t, yaml.Unmarshal([]byte(doc), &c))
	require.NoError(t, c.Validate())
	return &c
}

// object decodes a custom resource written in YAML, as the API server's
// JSON reaches the dynamic client (integers as int64).
func object(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := sigyaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j))
	return u
}

// render renders obj with the document's resource for served and returns
// sorted exposition lines, labels sorted, empty values dropped.
func render(t *testing.T, c *Config, served Served, obj *unstructured.Unstructured) string {
	t.Helper()
	rs, missing := c.Resolve([]Served{served})
	require.Empty(t, missing)
	require.Len(t, rs, 1)
	_, set, err := rs[0].NewRenderer(watch.RenderOptions{}).Render(obj)
	require.NoError(t, err)
	lines := make([]string, 0, set.Len())
	for i := range set.Len() {
		ls, err := encode.DecodeLabels(set.Labels(i))
		require.NoError(t, err)
		var name string
		var parts []string
		for _, l := range ls {
			if l.Name == encode.MetricName {
				name = l.Value
				continue
			}
			parts = append(parts, l.Name+"="+strconv.Quote(l.Value))
		}
		lines = append(lines, name+"{"+strings.Join(parts, ",")+"} "+strconv.FormatFloat(set.Refs[i].Value, 'f', -1, 64))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func requireLines(t *testing.T, want, got string) {
	t.Helper()
	var w []string
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			w = append(w, l)
		}
	}
	sort.Strings(w)
	if d := cmp.Diff(strings.Join(w, "\n"), got); d != "" {
		t.Fatalf("series (-want +got):\n%s", d)
	}
}

var fooServed = Served{GVK: GroupVersionKind{Group: "myteam.io", Version: "v1", Kind: "Foo"}, Plural: "foos", Namespaced: true}

const fooObject = `
apiVersion: myteam.io/v1
kind: Foo
metadata:
  name: foo
  namespace: ns1
  uid: 7c3e
  labels: {team: a, app.kubernetes.io/name: foo}
  creationTimestamp: "2022-06-28T00:00:00Z"
spec:
  replicas: 3
  limits: {cpu: 500m, memory: 1Gi}
  paused: false
status:
  phase: Running
  uptime: 43.21
  ready: "50%"
  sub: {a: {active: 1, ready: 2}, b: {active: 3, ready: 4}}
  conditions:
    - {type: Ready, status: "True", reason: Fine}
    - {type: Degraded, status: "False"}
    - {type: Stuck, status: Unknown}
  nodes: [{name: n1, weight: 2}, {name: n2, weight: 5}]
`

// Every metric type and path feature of kube-state-metrics'
// CustomResourceState documentation, with the series kube-state-metrics
// renders for them.
func TestRenderDocument(t *testing.T) {
	c := load(t, `
kind: CustomResourceStateMetrics
spec:
  resources:
    - groupVersionKind: {group: myteam.io, version: "v1", kind: Foo}
      commonLabels: {crd_type: foo}
      labelsFromPath:
        name: [metadata, name]
        namespace: [metadata, namespace]
      metrics:
        - name: replicas
          help: number of replicas
          each: {type: Gauge, gauge: {path: [spec, replicas]}}
        - name: limits
          help: limits
          each: {type: Gauge, gauge: {path: [spec, limits], labelFromKey: resource}}
        - name: uptime
          help: uptime
          commonLabels: {crd_type: override}
          each: {type: Gauge, gauge: {path: [status, uptime]}}
        - name: ready_ratio
          help: ratio
          each: {type: Gauge, gauge: {path: [status], valueFrom: [ready]}}
        - name: created
          help: created
          each: {type: Gauge, gauge: {path: [metadata, creationTimestamp]}}
        - name: sub_ready
          help: sub
          each:
            type: Gauge
            gauge: {path: [status, sub], labelFromKey: type, valueFrom: [ready], labelsFromPath: {active: [active]}}
        - name: condition
          help: conditions
          each:
            type: Gauge
            gauge: {path: [status, conditions], valueFrom: [status], labelsFromPath: {type: [type], reason: [reason]}}
        - name: ready
          help: ready condition
          each: {type: Gauge, gauge: {path: [status, conditions, "[type=Ready]", status]}}
        - name: missing
          help: missing, nil is zero
          each: {type: Gauge, gauge: {path: [status, nope], nilIsZero: true}}
        - name: missing_dropped
          help: missing
          each: {type: Gauge, gauge: {path: [status, nope]}}
        - name: node_weight
          help: by index
          each: {type: Gauge, gauge: {path: [status, nodes, "-1", weight]}}
        - name: phase
          help: phase
          each: {type: StateSet, stateSet: {path: [status, phase], labelName: phase, list: [Pending, Running, Failed]}}
        - name: condition_state
          help: conditions as states
          each:
            type: StateSet
            stateSet: {path: [status, conditions], valueFrom: [status], labelName: status, list: ["True", "False", "Unknown"], labelsFromPath: {type: [type]}}
        - name: info
          help: info
          each:
            type: Info
            info: {labelsFromPath: {phase: [status, phase], "label_*": [metadata, labels], paused: [spec, paused]}}
        - name: limit_info
          help: info by key
          each: {type: Info, info: {path: [spec, limits], labelFromKey: resource}}
`)
	requireLines(t, `
kube_customresource_replicas{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1"} 3
kube_customresource_limits{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",resource="cpu"} 0.5
kube_customresource_limits{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",resource="memory"} 1073741824
kube_customresource_uptime{crd_type="override",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1"} 43.21
kube_customresource_ready_ratio{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1"} 0.5
kube_customresource_created{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1"} 1656374400
kube_customresource_sub_ready{active="1",crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",type="a"} 2
kube_customresource_sub_ready{active="3",crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",type="b"} 4
kube_customresource_condition{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",reason="Fine",type="Ready"} 1
kube_customresource_condition{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",type="Degraded"} 0
kube_customresource_condition{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",type="Stuck"} 0
kube_customresource_ready{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1"} 1
kube_customresource_missing{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1"} 0
kube_customresource_node_weight{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1"} 5
kube_customresource_phase{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",phase="Pending"} 0
kube_customresource_phase{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",phase="Running"} 1
kube_customresource_phase{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",phase="Failed"} 0
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="True",type="Ready"} 1
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="False",type="Ready"} 0
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="Unknown",type="Ready"} 0
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="True",type="Degraded"} 0
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="False",type="Degraded"} 1
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="Unknown",type="Degraded"} 0
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="True",type="Stuck"} 0
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="False",type="Stuck"} 0
kube_customresource_condition_state{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",status="Unknown",type="Stuck"} 1
kube_customresource_info{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",label_app_kubernetes_io_name="foo",label_team="a",name="foo",namespace="ns1",paused="false",phase="Running"} 1
kube_customresource_limit_info{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",resource="cpu"} 1
kube_customresource_limit_info{crd_type="foo",customresource_group="myteam.io",customresource_kind="Foo",customresource_version="v1",name="foo",namespace="ns1",resource="memory"} 1
`, render(t, c, fooServed, object(t, fooObject)))

	// HELP and type reach the family metadata.
	var types []string
	for _, f := range c.Families() {
		types = append(types, f.Name+" "+f.Type.String()+" "+f.Help)
	}
	require.Contains(t, types, "kube_customresource_phase stateset phase")
	require.Contains(t, types, "kube_customresource_info info info")
	require.Contains(t, types, "kube_customresource_replicas gauge number of replicas")
}

// metricNamePrefix: unset, empty and custom, as kube-state-metrics'
// Test_fullName.
func TestMetricNamePrefix(t *testing.T) {
	for prefix, want := range map[string]string{"": "kube_customresource_count", `metricNamePrefix: ""`: "count", "metricNamePrefix: bar_baz": "bar_baz_count"} {
		c := load(t, `
spec:
  resources:
    - groupVersionKind: {group: myteam.io, version: v1, kind: Foo}
      `+prefix+`
      metrics:
        - {name: count, help: h, each: {type: Gauge, gauge: {path: [spec, replicas]}}}
`)
		require.Equal(t, want, c.Families()[0].Name)
	}
}

// A label copied from a map whose key makes a name no receiver takes (a
// leading digit) leaves that series out, counted by the renderer; the other
// series of the object are rendered.
func TestRenderLeavesOutInvalidLabelNames(t *testing.T) {
	c := load(t, `
kind: CustomResourceStateMetrics
spec:
  resources:
    - groupVersionKind: {group: myteam.io, version: "v1", kind: Foo}
      labelsFromPath:
        name: [metadata, name]
      metrics:
        - name: replicas
          help: number of replicas
          each: {type: Gauge, gauge: {path: [spec, replicas]}}
        - name: selector
          help: the selector's labels
          each: {type: Info, info: {labelsFromPath: {"*": [status, selector]}}}
`)
	rs, missing := c.Resolve([]Served{fooServed})
	require.Empty(t, missing)
	r := rs[0].NewRenderer(watch.RenderOptions{})
	obj := object(t, fooObject+"\n  selector: {1zone: a}\n")
	_, set, err := r.Render(obj)
	require.NoError(t, err)
	require.Equal(t, 1, set.Len(), "replicas only")
	require.Equal(t, 1, r.InvalidSeries())
	require.Zero(t, r.InvalidSeries(), "counted once")

	_, set, err = r.Render(object(t, fooObject+"\n  selector: {zone: a}\n"))
	require.NoError(t, err)
	require.Equal(t, 2, set.Len(), "a valid name renders")
	require.Zero(t, r.InvalidSeries())
}
