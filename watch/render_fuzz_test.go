package watch

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"

	"github.com/kube-state-push/kube-state-push/encode"
)

// fuzzLabelName and fuzzMetricName are what Prometheus accepts as label
// and metric names (without UTF-8 names, which kube-state-metrics never
// emits).
var (
	fuzzLabelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	fuzzMetricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// fuzzFillers are randfill's custom functions for types it cannot fill
// field by field: a Quantity's fields are unexported, and RawExtension
// holds an interface.
var fuzzFillers = []any{
	func(q *resource.Quantity, c randfill.Continue) {
		scales := []resource.Scale{resource.Nano, resource.Micro, resource.Milli, 0, resource.Kilo, resource.Mega, resource.Giga, resource.Tera}
		*q = *resource.NewScaledQuantity(c.Int63()-c.Int63(), scales[c.Intn(len(scales))])
	},
	func(r *runtime.RawExtension, c randfill.Continue) {
		if c.Bool() {
			r.Raw = []byte(`{"apiVersion":"example.com/v1","kind":"Params"}`)
		}
	},
	func(m *metav1.ObjectMeta, c randfill.Continue) {
		c.FillNoCustom(m)
		if m.UID == "" {
			m.UID = types.UID("uid")
		}
	},
}

// Random objects of every resource go through its renderer, every family
// on (opt-in ones included) and every label and annotation allowlisted:
// no panic, no error, and every series a valid Remote-Write label set:
// a valid __name__, sorted and unique valid label names (none reserved but
// __name__), and values that are not empty.
func FuzzRenderers(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("kube-state-push"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 255, 254, 253, 128, 64, 32})
	f.Add([]byte(strings.Repeat("\x01\xff\x7f\x00", 64)))
	opts := RenderOptions{
		Families: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}},
		Select:   func(FamilyInfo) bool { return true },
	}
	resources := All()
	renderers := make([]*Renderer, len(resources))
	for i, r := range resources {
		renderers[i] = r.NewRenderer(opts)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, r := range resources {
			obj := reflect.New(reflect.TypeOf(r.expected).Elem()).Interface()
			randfill.NewFromGoFuzz(data).NilChance(0.2).NumElements(0, 3).MaxDepth(8).Funcs(fuzzFillers...).Fill(obj)
			_, set, err := renderers[i].Render(obj)
			if err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			for j := range set.Len() {
				if err := checkSeries(set.Labels(j)); err != nil {
					t.Fatalf("%s: series %d: %v", r.Name, j, err)
				}
			}
		}
	})
}

// checkSeries checks one series' encoded labels as Remote-Write requires
// them.
func checkSeries(b []byte) error {
	ls, err := encode.DecodeLabels(b)
	if err != nil {
		return err
	}
	named := false
	for k, l := range ls {
		if l.Name == encode.MetricName {
			named = true
			if !fuzzMetricName.MatchString(l.Value) {
				return fmt.Errorf("%v: invalid metric name %q", ls, l.Value)
			}
		} else if !fuzzLabelName.MatchString(l.Name) || strings.HasPrefix(l.Name, "__") {
			return fmt.Errorf("%v: invalid label name %q", ls, l.Name)
		}
		if l.Value == "" {
			return fmt.Errorf("%v: label %q has an empty value", ls, l.Name)
		}
		if k > 0 && ls[k-1].Name >= l.Name {
			return fmt.Errorf("%v: labels unsorted or repeated at %q", ls, l.Name)
		}
	}
	if !named {
		return fmt.Errorf("%v: no %s", ls, encode.MetricName)
	}
	return nil
}
