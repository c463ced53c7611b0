package watch

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configMapForTest() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "settings", Namespace: "prod", UID: "u1", ResourceVersion: "123",
		CreationTimestamp: metav1.NewTime(time.Unix(1500000000, 0)),
		Labels:            map[string]string{"app": "web", "team.io/owner": "sre"},
		Annotations:       map[string]string{"note": "x"},
	}}
}

func TestConfigMapFamilies(t *testing.T) {
	cm := configMapForTest()
	cases := []struct {
		name string
		opts FamilyOptions
		obj  *metav1.PartialObjectMetadata
		want string
	}{
		{name: "defaults", obj: cm, want: `
			kube_configmap_created{configmap="settings",namespace="prod"} 1.5e+09
			kube_configmap_info{configmap="settings",namespace="prod"} 1
			kube_configmap_metadata_resource_version{configmap="settings",namespace="prod"} 123`},
		{name: "allowlists", obj: cm,
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"note", "missing"}},
			want: `
			kube_configmap_annotations{annotation_note="x",configmap="settings",namespace="prod"} 1
			kube_configmap_created{configmap="settings",namespace="prod"} 1.5e+09
			kube_configmap_info{configmap="settings",namespace="prod"} 1
			kube_configmap_labels{configmap="settings",label_app="web",label_team_io_owner="sre",namespace="prod"} 1
			kube_configmap_metadata_resource_version{configmap="settings",namespace="prod"} 123`},
		{name: "no creation time, non-numeric version",
			obj:  &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", UID: "u2", ResourceVersion: "abc"}},
			want: `kube_configmap_info{configmap="c",namespace="n"} 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, configMapResource(), c.opts, c.obj))
		})
	}
}
