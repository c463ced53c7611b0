package watch

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResourceQuotaFamilies(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "quotaTest", Namespace: "testNS", UID: "u1"}
	created := meta
	created.CreationTimestamp = metav1.NewTime(time.Unix(1500000000, 0))
	labelled := created
	labelled.Annotations = map[string]string{"foo": "bar"}
	labelled.Labels = map[string]string{"hello": "world"}

	list := func(kv ...string) v1.ResourceList {
		rl := v1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return rl
	}
	hard := list("cpu", "4.3", "memory", "2.1G", "storage", "10G", "pods", "9", "services", "8",
		"replicationcontrollers", "7", "resourcequotas", "6", "secrets", "5", "configmaps", "4",
		"persistentvolumeclaims", "3", "services.nodeports", "2", "services.loadbalancers", "1")
	used := list("cpu", "2.1", "memory", "500M", "storage", "9G", "pods", "8", "services", "7",
		"replicationcontrollers", "6", "resourcequotas", "5", "secrets", "4", "configmaps", "3",
		"persistentvolumeclaims", "2", "services.nodeports", "1", "services.loadbalancers", "0")

	cases := []struct {
		name string
		opts FamilyOptions
		obj  *v1.ResourceQuota
		want string
	}{
		{name: "created, empty status", obj: &v1.ResourceQuota{ObjectMeta: created},
			want: `kube_resourcequota_created{namespace="testNS",resourcequota="quotaTest"} 1.5e+09`},
		{name: "hard and used from the status, not the spec",
			obj: &v1.ResourceQuota{ObjectMeta: meta,
				Spec:   v1.ResourceQuotaSpec{Hard: list("cpu", "100", "count/foo", "1")},
				Status: v1.ResourceQuotaStatus{Hard: hard, Used: used}},
			want: `
			kube_resourcequota{namespace="testNS",resource="configmaps",resourcequota="quotaTest",type="hard"} 4
			kube_resourcequota{namespace="testNS",resource="configmaps",resourcequota="quotaTest",type="used"} 3
			kube_resourcequota{namespace="testNS",resource="cpu",resourcequota="quotaTest",type="hard"} 4.3
			kube_resourcequota{namespace="testNS",resource="cpu",resourcequota="quotaTest",type="used"} 2.1
			kube_resourcequota{namespace="testNS",resource="memory",resourcequota="quotaTest",type="hard"} 2.1e+09
			kube_resourcequota{namespace="testNS",resource="memory",resourcequota="quotaTest",type="used"} 5e+08
			kube_resourcequota{namespace="testNS",resource="persistentvolumeclaims",resourcequota="quotaTest",type="hard"} 3
			kube_resourcequota{namespace="testNS",resource="persistentvolumeclaims",resourcequota="quotaTest",type="used"} 2
			kube_resourcequota{namespace="testNS",resource="pods",resourcequota="quotaTest",type="hard"} 9
			kube_resourcequota{namespace="testNS",resource="pods",resourcequota="quotaTest",type="used"} 8
			kube_resourcequota{namespace="testNS",resource="replicationcontrollers",resourcequota="quotaTest",type="hard"} 7
			kube_resourcequota{namespace="testNS",resource="replicationcontrollers",resourcequota="quotaTest",type="used"} 6
			kube_resourcequota{namespace="testNS",resource="resourcequotas",resourcequota="quotaTest",type="hard"} 6
			kube_resourcequota{namespace="testNS",resource="resourcequotas",resourcequota="quotaTest",type="used"} 5
			kube_resourcequota{namespace="testNS",resource="secrets",resourcequota="quotaTest",type="hard"} 5
			kube_resourcequota{namespace="testNS",resource="secrets",resourcequota="quotaTest",type="used"} 4
			kube_resourcequota{namespace="testNS",resource="services",resourcequota="quotaTest",type="hard"} 8
			kube_resourcequota{namespace="testNS",resource="services",resourcequota="quotaTest",type="used"} 7
			kube_resourcequota{namespace="testNS",resource="services.loadbalancers",resourcequota="quotaTest",type="hard"} 1
			kube_resourcequota{namespace="testNS",resource="services.loadbalancers",resourcequota="quotaTest",type="used"} 0
			kube_resourcequota{namespace="testNS",resource="services.nodeports",resourcequota="quotaTest",type="hard"} 2
			kube_resourcequota{namespace="testNS",resource="services.nodeports",resourcequota="quotaTest",type="used"} 1
			kube_resourcequota{namespace="testNS",resource="storage",resourcequota="quotaTest",type="hard"} 1e+10
			kube_resourcequota{namespace="testNS",resource="storage",resourcequota="quotaTest",type="used"} 9e+09`},
		{name: "resource names kept as they are",
			obj: &v1.ResourceQuota{ObjectMeta: meta, Status: v1.ResourceQuotaStatus{
				Hard: list("count/deployments.apps", "10", "requests.nvidia.com/gpu", "2"),
				Used: list("count/deployments.apps", "3")}},
			want: `
			kube_resourcequota{namespace="testNS",resource="count/deployments.apps",resourcequota="quotaTest",type="hard"} 10
			kube_resourcequota{namespace="testNS",resource="count/deployments.apps",resourcequota="quotaTest",type="used"} 3
			kube_resourcequota{namespace="testNS",resource="requests.nvidia.com/gpu",resourcequota="quotaTest",type="hard"} 2`},
		{name: "allowlists", obj: &v1.ResourceQuota{ObjectMeta: labelled},
			opts: FamilyOptions{AnnotationsAllowlist: []string{"foo"}, LabelsAllowlist: []string{"hello"}},
			want: `
			kube_resourcequota_annotations{annotation_foo="bar",namespace="testNS",resourcequota="quotaTest"} 1
			kube_resourcequota_created{namespace="testNS",resourcequota="quotaTest"} 1.5e+09
			kube_resourcequota_labels{label_hello="world",namespace="testNS",resourcequota="quotaTest"} 1`},
		{name: "labels without an allowlist", obj: &v1.ResourceQuota{ObjectMeta: labelled},
			want: `kube_resourcequota_created{namespace="testNS",resourcequota="quotaTest"} 1.5e+09`},
		{name: "malformed", obj: &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{UID: "u"},
			Status: v1.ResourceQuotaStatus{Hard: v1.ResourceList{"": resource.Quantity{}}, Used: v1.ResourceList{}}},
			opts: FamilyOptions{AnnotationsAllowlist: []string{"*"}, LabelsAllowlist: []string{"*"}},
			want: `
			kube_resourcequota{type="hard"} 0
			kube_resourcequota_annotations{} 1
			kube_resourcequota_labels{} 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, resourceQuotaResource(), c.opts, c.obj))
		})
	}
}
