package watch

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLimitRangeFamilies(t *testing.T) {
	meta := metav1.ObjectMeta{
		Name: "quotaTest", Namespace: "testNS", UID: "u1",
		CreationTimestamp: metav1.NewTime(time.Unix(1500000000, 0)),
	}
	mem := v1.ResourceList{v1.ResourceMemory: resource.MustParse("2.1G")}
	cases := []struct {
		name string
		obj  *v1.LimitRange
		want string
	}{
		{name: "every constraint",
			obj: &v1.LimitRange{ObjectMeta: meta, Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{{
				Type: v1.LimitTypePod, Max: mem, Min: mem, Default: mem, DefaultRequest: mem, MaxLimitRequestRatio: mem,
			}}}},
			want: `
			kube_limitrange_created{limitrange="quotaTest",namespace="testNS"} 1.5e+09
			kube_limitrange{constraint="default",limitrange="quotaTest",namespace="testNS",resource="memory",type="Pod"} 2.1e+09
			kube_limitrange{constraint="defaultRequest",limitrange="quotaTest",namespace="testNS",resource="memory",type="Pod"} 2.1e+09
			kube_limitrange{constraint="max",limitrange="quotaTest",namespace="testNS",resource="memory",type="Pod"} 2.1e+09
			kube_limitrange{constraint="maxLimitRequestRatio",limitrange="quotaTest",namespace="testNS",resource="memory",type="Pod"} 2.1e+09
			kube_limitrange{constraint="min",limitrange="quotaTest",namespace="testNS",resource="memory",type="Pod"} 2.1e+09`},
		{name: "several limits and resources",
			obj: &v1.LimitRange{ObjectMeta: meta, Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{
				{Type: v1.LimitTypeContainer,
					Min:                  v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("64Mi")},
					MaxLimitRequestRatio: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1.5")}},
				{Type: v1.LimitTypePersistentVolumeClaim, Max: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Ti")}},
			}}},
			want: `
			kube_limitrange_created{limitrange="quotaTest",namespace="testNS"} 1.5e+09
			kube_limitrange{constraint="min",limitrange="quotaTest",namespace="testNS",resource="cpu",type="Container"} 0.01
			kube_limitrange{constraint="min",limitrange="quotaTest",namespace="testNS",resource="memory",type="Container"} 6.7108864e+07
			kube_limitrange{constraint="maxLimitRequestRatio",limitrange="quotaTest",namespace="testNS",resource="cpu",type="Container"} 1.5
			kube_limitrange{constraint="max",limitrange="quotaTest",namespace="testNS",resource="storage",type="PersistentVolumeClaim"} 1.099511627776e+12`},
		{name: "malformed",
			obj: &v1.LimitRange{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{
				{}, {Max: v1.ResourceList{"": resource.Quantity{}}},
			}}},
			want: `kube_limitrange{constraint="max"} 0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, limitRangeResource(), FamilyOptions{}, c.obj))
		})
	}
}
