package watch

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceAccountFamilies(t *testing.T) {
	full := &v1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{
			Name: "serviceAccountName", Namespace: "serviceAccountNS", UID: "serviceAccountUID",
			CreationTimestamp: metav1.NewTime(time.Unix(1500000000, 0)),
			DeletionTimestamp: &metav1.Time{Time: time.Unix(3000000000, 0)},
			Labels:            map[string]string{"app": "web"},
			Annotations:       map[string]string{"owner": "sre"},
		},
		AutomountServiceAccountToken: new(true),
		Secrets:                      []v1.ObjectReference{{APIVersion: "v1", Kind: "Secret", Name: "secretName", Namespace: "serviceAccountNS"}},
		ImagePullSecrets:             []v1.LocalObjectReference{{Name: "imagePullSecretName"}},
	}
	cases := []struct {
		name string
		opts FamilyOptions
		obj  *v1.ServiceAccount
		want string
	}{
		{name: "full", obj: full, want: `
			kube_serviceaccount_info{automount_token="true",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1
			kube_serviceaccount_created{namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1.5e+09
			kube_serviceaccount_deleted{namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 3e+09
			kube_serviceaccount_secret{name="secretName",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1
			kube_serviceaccount_image_pull_secret{name="imagePullSecretName",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1`},
		{name: "allowlists", obj: full,
			opts: FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"*"}},
			want: `
			kube_serviceaccount_info{automount_token="true",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1
			kube_serviceaccount_created{namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1.5e+09
			kube_serviceaccount_deleted{namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 3e+09
			kube_serviceaccount_secret{name="secretName",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1
			kube_serviceaccount_image_pull_secret{name="imagePullSecretName",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1
			kube_serviceaccount_annotations{annotation_owner="sre",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1
			kube_serviceaccount_labels{label_app="web",namespace="serviceAccountNS",serviceaccount="serviceAccountName",uid="serviceAccountUID"} 1`},
		{name: "automount off, several secrets",
			obj: &v1.ServiceAccount{
				ObjectMeta:                   metav1.ObjectMeta{Name: "sa", Namespace: "ns", UID: "u2"},
				AutomountServiceAccountToken: new(false),
				Secrets:                      []v1.ObjectReference{{Name: "a"}, {Name: "b"}},
				ImagePullSecrets:             []v1.LocalObjectReference{{Name: "r1"}, {Name: "r2"}},
			},
			want: `
			kube_serviceaccount_info{automount_token="false",namespace="ns",serviceaccount="sa",uid="u2"} 1
			kube_serviceaccount_secret{name="a",namespace="ns",serviceaccount="sa",uid="u2"} 1
			kube_serviceaccount_secret{name="b",namespace="ns",serviceaccount="sa",uid="u2"} 1
			kube_serviceaccount_image_pull_secret{name="r1",namespace="ns",serviceaccount="sa",uid="u2"} 1
			kube_serviceaccount_image_pull_secret{name="r2",namespace="ns",serviceaccount="sa",uid="u2"} 1`},
		{name: "malformed",
			obj: &v1.ServiceAccount{
				ObjectMeta:       metav1.ObjectMeta{UID: "u", DeletionTimestamp: &metav1.Time{}},
				Secrets:          []v1.ObjectReference{{}},
				ImagePullSecrets: []v1.LocalObjectReference{{}},
			},
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}},
			want: `
			kube_serviceaccount_info{uid="u"} 1
			kube_serviceaccount_secret{uid="u"} 1
			kube_serviceaccount_image_pull_secret{uid="u"} 1
			kube_serviceaccount_annotations{uid="u"} 1
			kube_serviceaccount_labels{uid="u"} 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, serviceAccountResource(), c.opts, c.obj))
		})
	}
}
