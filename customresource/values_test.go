package customresource

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixture is kube-state-metrics' own test object
// (pkg/customresourcestate/registry_factory_test.go), decoded from JSON as
// there, so numbers are float64.
func fixture(t *testing.T) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{
  "spec": {"replicas": 1, "version": "v0.0.0",
    "order": [{"id": 1, "value": true}, {"id": 3, "value": false}]},
  "status": {
    "active": {"type-a": 1, "type-b": 3},
    "phase": "foo",
    "sub": {"type-a": {"active": 1, "ready": 2}, "type-b": {"active": 3, "ready": 4}},
    "uptime": 43.21,
    "quantity_milli": "250m",
    "quantity_binarySI": "5Gi",
    "percentage": "28%",
    "condition_values": [{"name": "a", "value": 45}, {"name": "b", "value": 66}],
    "conditions": [{"type": "Ready", "status": "True"}, {"type": "Provisioned", "status": "False"}]
  },
  "metadata": {"name": "foo", "labels": {"foo": "bar"}, "annotations": {"qux": "quxx", "bar": "baz"},
    "percentage": "39%", "creationTimestamp": "2022-06-28T00:00:00Z"}
}`), &obj))
	return obj
}

func mustPath(t *testing.T, parts ...string) path {
	t.Helper()
	p, err := compilePath(parts)
	require.NoError(t, err)
	return p
}

func ev(value float64, kv ...string) eachValue {
	var ls labelSet
	for i := 0; i+1 < len(kv); i += 2 {
		ls.set(kv[i], kv[i+1])
	}
	return eachValue{labels: ls, value: value}
}

func newGauge(at path, valueFrom path, labelFromKey string, nilIsZero bool, fromPath map[string]path) *gauge {
	return &gauge{common: common{at: at, fromPath: pathLabelsOf(fromPath)}, valueFrom: valueFrom, labelFromKey: labelFromKey, nilIsZero: nilIsZero, parse: toFloat64}
}

// labelMap is a labelSet as a map, for comparisons.
func labelMap(ls labelSet) map[string]string {
	m := map[string]string{}
	for _, l := range ls {
		m[l.name] = l.value
	}
	return m
}

// The cases of kube-state-metrics' Test_values, with its expected series.
func TestValuesAsKubeStateMetrics(t *testing.T) {
	obj := fixture(t)
	p := func(parts ...string) path { return mustPath(t, parts...) }
	for _, tc := range []struct {
		name string
		each each
		want []eachValue
	}{
		{"single", newGauge(p("spec", "replicas"), nil, "", false, nil), []eachValue{ev(1)}},
		{"obj", newGauge(p("status", "active"), nil, "type", false, nil), []eachValue{ev(1, "type", "type-a"), ev(3, "type", "type-b")}},
		{"deep obj", newGauge(p("status", "sub"), p("ready"), "type", false, map[string]path{"active": p("active")}),
			[]eachValue{ev(2, "type", "type-a", "active", "1"), ev(4, "type", "type-b", "active", "3")}},
		{"path-relative valueFrom value", newGauge(p("metadata"), p("creationTimestamp"), "", false, map[string]path{"name": p("name")}),
			[]eachValue{ev(1.6563744e+09, "name", "foo")}},
		{"non-existent path", newGauge(p("foo"), p("creationTimestamp"), "", false, map[string]path{"name": p("name")}), nil},
		{"valueFrom non-existent single", newGauge(p("spec", "replicas"), p("non-existent"), "", false, nil), nil},
		{"valueFrom non-existent array", newGauge(p("status", "condition_values"), p("non-existent"), "", false, map[string]path{"name": p("name")}), nil},
		{"array", newGauge(p("status", "condition_values"), p("value"), "", false, map[string]path{"name": p("name")}),
			[]eachValue{ev(45, "name", "a"), ev(66, "name", "b")}},
		{"timestamp", newGauge(p("metadata", "creationTimestamp"), nil, "", false, nil), []eachValue{ev(1656374400)}},
		{"quantity_milli", newGauge(p("status", "quantity_milli"), nil, "", false, nil), []eachValue{ev(0.25)}},
		{"quantity_binarySI", newGauge(p("status", "quantity_binarySI"), nil, "", false, nil), []eachValue{ev(5.36870912e+09)}},
		{"percentage", newGauge(p("status", "percentage"), nil, "", false, nil), []eachValue{ev(0.28)}},
		{"path-relative valueFrom percentage", newGauge(p("metadata"), p("percentage"), "", false, map[string]path{"name": p("name")}),
			[]eachValue{ev(0.39, "name", "foo")}},
		{"boolean_string nilIsZero", newGauge(p("spec", "paused"), nil, "", true, nil), []eachValue{ev(0)}},
		{"info", &info{common: common{fromPath: pathLabelsOf(map[string]path{"version": p("spec", "version")})}}, []eachValue{ev(1, "version", "v0.0.0")}},
		{"info nil path", &info{common: common{at: p("does", "not", "exist")}}, nil},
		{"info label from key", &info{common: common{at: p("status", "active")}, labelFromKey: "type"},
			[]eachValue{ev(1, "type", "type-a"), ev(1, "type", "type-b")}},
		{"info label from path", &info{common: common{at: p("status", "sub"), fromPath: pathLabelsOf(map[string]path{"active": p("active")})}},
			[]eachValue{ev(1, "active", "1"), ev(1, "active", "3")}},
		{"stateset", &stateSet{common: common{at: p("status", "phase")}, labelName: "phase", list: []string{"foo", "bar"}},
			[]eachValue{ev(0, "phase", "bar"), ev(1, "phase", "foo")}},
		{"stateset nil path", &stateSet{common: common{at: p("does", "not", "exist")}, labelName: "phase", list: []string{"foo", "bar"}}, nil},
		{"stateset nil valueFrom", &stateSet{common: common{at: p("status")}, valueFrom: p("does", "not", "exist"), labelName: "phase", list: []string{"foo", "bar"}}, nil},
		{"stateset non-string value", &stateSet{common: common{at: p("spec", "replicas")}, labelName: "phase", list: []string{"1", "2"}}, nil},
		{"status_conditions", newGauge(p("status", "conditions", "[type=Ready]", "status"), nil, "", false, nil), []eachValue{ev(1)}},
		{"status_conditions_all", newGauge(p("status", "conditions"), p("status"), "", false, map[string]path{"type": p("type")}),
			[]eachValue{ev(0, "type", "Provisioned"), ev(1, "type", "Ready")}},
		{"= expression matching", &info{common: common{fromPath: pathLabelsOf(map[string]path{"bar": p("metadata", "annotations", "bar=baz")})}},
			[]eachValue{ev(1, "bar", "baz")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.each.values(tc.each.path().get(obj))
			slices.SortFunc(got, func(a, b eachValue) int { return compareLabelSets(a.labels, b.labels) })
			require.Equal(t, tc.want, got)
		})
	}
}

// kube-state-metrics' Test_addPathLabels and Test_valuePath_Get.
func TestPathsAsKubeStateMetrics(t *testing.T) {
	obj := fixture(t)
	p := func(parts ...string) path { return mustPath(t, parts...) }
	var got labelSet
	addPathLabels(obj, pathLabelsOf(map[string]path{"bool": p("spec", "order", "-1", "value"), "number": p("spec", "replicas"), "string": p("metadata", "labels", "foo")}), &got)
	require.Equal(t, map[string]string{"bool": "false", "number": "1", "string": "bar"}, labelMap(got))

	got = nil
	addPathLabels(obj, pathLabelsOf(map[string]path{"*1": p("metadata", "annotations"), "bar": p("metadata", "labels", "foo"), "label_object_*": p("metadata", "annotations")}), &got)
	require.Equal(t, map[string]string{"qux": "quxx", "bar": "bar", "label_object_qux": "quxx", "label_object_bar": "baz"}, labelMap(got))

	got = nil
	addPathLabels(obj, pathLabelsOf(map[string]path{"idx": p("spec", "order", "5")}), &got)
	require.Empty(t, got)

	for _, tc := range []struct {
		want  any
		parts []string
	}{
		{float64(1), []string{"spec", "replicas"}},
		{float64(66), []string{"status", "condition_values", "[name=b]", "value"}},
		{true, []string{"spec", "order", "0", "value"}},
		{"bar", []string{"metadata", "labels", "foo"}},
		{false, []string{"spec", "order", "[id=3]", "value"}},
		{float64(3), []string{"spec", "order", "[value=false]", "id"}},
	} {
		require.Equal(t, tc.want, p(tc.parts...).get(obj), "%v", tc.parts)
	}
	_, err := compilePath([]string{"status", "conditions", "[Ready]"})
	require.EqualError(t, err, "invalid list lookup: [Ready]")
}

// The value parsing of kube-state-metrics' toFloat64.
func TestToFloat64(t *testing.T) {
	for in, want := range map[any]float64{
		"True": 1, "yes": 1, "FALSE": 0, "no": 0, "Unknown": 0, "2022-06-28T00:00:00Z": 1656374400,
		"250m": 0.25, "5Gi": 5368709120, "1.5": 1.5, "28%": 0.28, int64(7): 7, 2.5: 2.5, true: 1, false: 0,
	} {
		got, err := toFloat64(in, false)
		require.NoError(t, err, "%v", in)
		require.InDelta(t, want, got, 1e-12, "%v", in)
	}
	for _, in := range []any{"2160h", "abc", map[string]any{}, nil} {
		_, err := toFloat64(in, false)
		require.Error(t, err, "%v", in)
	}
	got, err := toFloat64(nil, true)
	require.NoError(t, err)
	require.Zero(t, got)
}

// labelValue writes what fmt's %v writes.
func TestLabelValueIsPercentV(t *testing.T) {
	for _, v := range []any{"x", int64(-3), 1.5, 1e21, 1e6, 0.0001, 123456789.0, true, []any{"a"}, map[string]any{"a": int64(1)}} {
		require.Equal(t, fmtV(v), labelValue(v))
	}
}

func fmtV(v any) string { return fmt.Sprintf("%v", v) }
