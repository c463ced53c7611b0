package watch

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLeaseFamilies(t *testing.T) {
	meta := metav1.ObjectMeta{
		Generation: 2, Name: "kube-master", Namespace: "default", UID: "u1",
		CreationTimestamp: metav1.NewTime(time.Unix(1500000000, 0)),
		OwnerReferences:   []metav1.OwnerReference{{Kind: "Node", Name: "kube-master"}},
	}
	renew := &metav1.MicroTime{Time: time.Unix(1500000000, 0)}
	cases := []struct {
		name string
		obj  *coordinationv1.Lease
		want string
	}{
		{name: "holder",
			obj: &coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{RenewTime: renew, HolderIdentity: new("kube-master")}},
			want: `
			kube_lease_owner{lease="kube-master",lease_holder="kube-master",namespace="default",owner_kind="Node",owner_name="kube-master"} 1
			kube_lease_renew_time{lease="kube-master",namespace="default"} 1.5e+09`},
		{name: "no holder",
			obj: &coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{RenewTime: renew}},
			want: `
			kube_lease_owner{lease="kube-master",namespace="default",owner_kind="Node",owner_name="kube-master"} 1
			kube_lease_renew_time{lease="kube-master",namespace="default"} 1.5e+09`},
		{name: "no owners, renew time in whole seconds",
			obj: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "kube-system", UID: "u2"},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: new("a_b"),
					RenewTime:      &metav1.MicroTime{Time: time.Unix(1700000000, 999999000)},
				},
			},
			want: `
			kube_lease_owner{lease="l",lease_holder="a_b",namespace="kube-system"} 1
			kube_lease_renew_time{lease="l",namespace="kube-system"} 1.7e+09`},
		{name: "several owners, no controller label",
			obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "n", UID: "u3",
				OwnerReferences: []metav1.OwnerReference{
					{Kind: "Pod", Name: "p", Controller: new(true)},
					{Kind: "Node", Name: "n1"},
				}}},
			want: `
			kube_lease_owner{lease="l",namespace="n",owner_kind="Node",owner_name="n1"} 1
			kube_lease_owner{lease="l",namespace="n",owner_kind="Pod",owner_name="p"} 1`},
		{name: "malformed",
			obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{UID: "u", OwnerReferences: []metav1.OwnerReference{{}}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: new(""), RenewTime: &metav1.MicroTime{}}},
			want: `kube_lease_owner{} 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, leaseResource(), FamilyOptions{}, c.obj))
		})
	}
}
