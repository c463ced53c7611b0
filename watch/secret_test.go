package watch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/ptr"
)

func TestSecretFamilies(t *testing.T) {
	start := metav1.Unix(1501569018, 0)
	all := []string{"kube_secret_info", "kube_secret_metadata_resource_version", "kube_secret_created",
		"kube_secret_labels", "kube_secret_type", "kube_secret_owner", "kube_secret_annotations"}
	secret := func(ns, name, rv string, typ v1.SecretType, created metav1.Time) *secretMeta {
		return &secretMeta{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv, CreationTimestamp: created},
			Type:       typ,
		}
	}
	withLabels := func(s *secretMeta, labels map[string]string) *secretMeta {
		s.Labels = labels
		return s
	}
	owned := withLabels(secret("ns4", "secret4", "0", v1.SecretTypeOpaque, start), map[string]string{"test-4": "test-4"})
	owned.OwnerReferences = []metav1.OwnerReference{{Name: "managed-secret4", Kind: "ManagedSecret", Controller: ptr.To(true)}}
	annotated := secret("ns5", "secret5", "42", "example.com/custom", start)
	annotated.Labels = map[string]string{"app.kubernetes.io/name": "web", "tier": "db"}
	annotated.Annotations = map[string]string{"owner": "sre", "kubectl.kubernetes.io/last-applied": "{}"}
	annotated.OwnerReferences = []metav1.OwnerReference{
		{Name: "web", Kind: "Deployment"},
		{Name: "web-7f9", Kind: "ReplicaSet", Controller: ptr.To(false)},
	}

	cases := []struct {
		name string
		opts FamilyOptions
		obj  *secretMeta
		want string
	}{
		{name: "opaque, zero resource version, no creation time",
			obj: secret("ns1", "secret1", "000000", v1.SecretTypeOpaque, metav1.Time{}), want: `
			kube_secret_info{namespace="ns1",secret="secret1"} 1
			kube_secret_owner{namespace="ns1",secret="secret1"} 1
			kube_secret_type{namespace="ns1",secret="secret1",type="Opaque"} 1
			kube_secret_metadata_resource_version{namespace="ns1",secret="secret1"} 0`},
		{name: "service account token, non-numeric resource version",
			obj: secret("ns2", "secret2", "123456B", v1.SecretTypeServiceAccountToken, start), want: `
			kube_secret_info{namespace="ns2",secret="secret2"} 1
			kube_secret_owner{namespace="ns2",secret="secret2"} 1
			kube_secret_type{namespace="ns2",secret="secret2",type="kubernetes.io/service-account-token"} 1
			kube_secret_created{namespace="ns2",secret="secret2"} 1.501569018e+09`},
		{name: "dockercfg with labels and no allowlist",
			obj: withLabels(secret("ns3", "secret3", "0", v1.SecretTypeDockercfg, start), map[string]string{"test-3": "test-3"}), want: `
			kube_secret_info{namespace="ns3",secret="secret3"} 1
			kube_secret_owner{namespace="ns3",secret="secret3"} 1
			kube_secret_type{namespace="ns3",secret="secret3",type="kubernetes.io/dockercfg"} 1
			kube_secret_created{namespace="ns3",secret="secret3"} 1.501569018e+09
			kube_secret_metadata_resource_version{namespace="ns3",secret="secret3"} 0`},
		{name: "controller owner", obj: owned, want: `
			kube_secret_info{namespace="ns4",secret="secret4"} 1
			kube_secret_owner{namespace="ns4",owner_is_controller="true",owner_kind="ManagedSecret",owner_name="managed-secret4",secret="secret4"} 1
			kube_secret_type{namespace="ns4",secret="secret4",type="Opaque"} 1
			kube_secret_created{namespace="ns4",secret="secret4"} 1.501569018e+09
			kube_secret_metadata_resource_version{namespace="ns4",secret="secret4"} 0`},
		{name: "allowlists, custom type, owners without controller", obj: annotated,
			opts: FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"owner", "missing"}},
			want: `
			kube_secret_annotations{annotation_owner="sre",namespace="ns5",secret="secret5"} 1
			kube_secret_created{namespace="ns5",secret="secret5"} 1.501569018e+09
			kube_secret_info{namespace="ns5",secret="secret5"} 1
			kube_secret_labels{label_app_kubernetes_io_name="web",label_tier="db",namespace="ns5",secret="secret5"} 1
			kube_secret_metadata_resource_version{namespace="ns5",secret="secret5"} 42
			kube_secret_owner{namespace="ns5",owner_is_controller="false",owner_kind="Deployment",owner_name="web",secret="secret5"} 1
			kube_secret_owner{namespace="ns5",owner_is_controller="false",owner_kind="ReplicaSet",owner_name="web-7f9",secret="secret5"} 1
			kube_secret_type{namespace="ns5",secret="secret5",type="example.com/custom"} 1`},
		{name: "allowlist naming absent keys",
			obj:  secret("ns6", "secret6", "", v1.SecretTypeTLS, metav1.Time{}),
			opts: FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"*"}},
			want: `
			kube_secret_annotations{namespace="ns6",secret="secret6"} 1
			kube_secret_info{namespace="ns6",secret="secret6"} 1
			kube_secret_labels{namespace="ns6",secret="secret6"} 1
			kube_secret_owner{namespace="ns6",secret="secret6"} 1
			kube_secret_type{namespace="ns6",secret="secret6",type="kubernetes.io/tls"} 1`},
		{name: "malformed: nothing but a UID",
			obj: &secretMeta{ObjectMeta: metav1.ObjectMeta{UID: "u"}}, want: `
			kube_secret_info{} 1
			kube_secret_owner{} 1
			kube_secret_type{} 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, secretResource(), c.opts, c.obj, all...))
		})
	}
}

func TestSecretMetaDeepCopy(t *testing.T) {
	s := &secretMeta{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}}, Type: v1.SecretTypeOpaque}
	c := s.DeepCopyObject().(*secretMeta)
	require.Equal(t, s, c)
	c.Labels["k"] = "changed"
	require.Equal(t, "v", s.Labels["k"])

	l := &secretMetaList{ListMeta: metav1.ListMeta{Continue: "x"}, Items: []secretMeta{*s}}
	lc := l.DeepCopyObject().(*secretMetaList)
	require.Equal(t, l, lc)
	lc.Items[0].Labels["k"] = "changed"
	require.Equal(t, "v", l.Items[0].Labels["k"])
	require.Nil(t, (*secretMeta)(nil).DeepCopyObject())
}

// Columns and rows as kube-apiserver v1.37 sends them for
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and
// includeObject=Metadata (descriptions shortened).
const secretColumns = `[
	{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace.","priority":0},
	{"name":"Type","type":"string","format":"","description":"Used to facilitate programmatic handling of secret data.","priority":0},
	{"name":"Data","type":"string","format":"","description":"Data contains the secret data.","priority":0},
	{"name":"Age","type":"string","format":"","description":"CreationTimestamp is a timestamp.","priority":0}]`

// secretRow is a table row for one secret, with the server's cells;
// extraMeta is added to its metadata object (e.g. `,"labels":{"a":"b"}`).
func secretRow(name, typ, rv, extraMeta string) string {
	return rowWithCells(fmt.Sprintf(`%q,%q,2,"5m"`, name, typ), name, rv, extraMeta)
}

// rowWithCells is a table row for one secret with the given cells.
func rowWithCells(cells, name, rv, extraMeta string) string {
	return fmt.Sprintf(`{"cells":[%s],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",`+
		`"metadata":{"name":%q,"namespace":"ns1","uid":"uid-%s","resourceVersion":%q,"creationTimestamp":"2026-11-29T16:08:07Z"%s,`+
		`"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-11-29T16:08:07Z","fieldsType":"FieldsV1",`+
		`"fieldsV1":{"f:data":{".":{},"f:password":{}},"f:type":{}}}]}}}`, cells, name, name, rv, extraMeta)
}

// secretTable is a Table with the given metadata, columns and rows.
func secretTable(listMeta, columns string, rows ...string) string {
	return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":` + listMeta +
		`,"columnDefinitions":` + columns + `,"rows":[` + strings.Join(rows, ",") + `]}`
}

// tableServer serves handler after checking that every request asks for a
// table with metadata-only rows; it records each request's query.
type tableServer struct {
	*httptest.Server
	// mu guards queries.
	mu      sync.Mutex
	queries []map[string]string
}

func newTableServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *tableServer {
	t.Helper()
	s := &tableServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := map[string]string{"path": r.URL.Path, "accept": r.Header.Get("Accept")}
		for k, v := range r.URL.Query() {
			q[k] = strings.Join(v, ",")
		}
		s.mu.Lock()
		s.queries = append(s.queries, q)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *tableServer) requests() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]string(nil), s.queries...)
}

// clients returns the agent's clients (protobuf by default) for the server.
func (s *tableServer) clients(t *testing.T) Clients {
	t.Helper()
	c, err := NewClients(&rest.Config{Host: s.URL}, "test", ReadBatching{})
	require.NoError(t, err)
	return c
}

func TestSecretTableList(t *testing.T) {
	// Columns in another order than the server's: the type is found by name.
	reordered := `[{"name":"Name","type":"string"},{"name":"Age","type":"string"},{"name":"Type","type":"string"},{"name":"Data","type":"string"}]`
	srv := newTableServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("continue") {
		case "":
			fmt.Fprint(w, secretTable(`{"resourceVersion":"211","continue":"page2","remainingItemCount":1}`, secretColumns,
				secretRow("db", "Opaque", "209", `,"labels":{"app":"db"}`),
				secretRow("tls", "kubernetes.io/tls", "210", `,"annotations":{"a":"b"}`)))
		case "page2":
			fmt.Fprint(w, secretTable(`{"resourceVersion":"211"}`, reordered,
				rowWithCells(`"pull","5m","kubernetes.io/dockerconfigjson",1`, "pull", "211", "")))
		default:
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"continue token expired","reason":"Expired","code":410}`)
		}
	})
	c := srv.clients(t)
	ctx := t.Context()

	t.Run("one page", func(t *testing.T) {
		created := metav1.NewTime(time.Date(2026, 11, 29, 16, 8, 7, 0, time.UTC).Local()) // as metav1.Time decodes
		obj, err := secretResource().list(ctx, c, "ns1", metav1.ListOptions{Limit: 2, FieldSelector: "metadata.name!=x", ResourceVersion: "0"})
		require.NoError(t, err)
		list := obj.(*secretMetaList)
		require.Equal(t, "page2", list.Continue)
		require.Equal(t, "211", list.ResourceVersion)
		require.Equal(t, ptr.To[int64](1), list.RemainingItemCount)
		require.Equal(t, []secretMeta{
			{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns1", UID: "uid-db", ResourceVersion: "209",
				CreationTimestamp: created, Labels: map[string]string{"app": "db"}},
				Type: v1.SecretTypeOpaque},
			{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "ns1", UID: "uid-tls", ResourceVersion: "210",
				CreationTimestamp: created, Annotations: map[string]string{"a": "b"}},
				Type: v1.SecretTypeTLS},
		}, list.Items)
		q := srv.requests()[0]
		require.Equal(t, map[string]string{
			"path": "/api/v1/namespaces/ns1/secrets", "accept": tableAccept, "includeObject": "Metadata",
			"limit": "2", "fieldSelector": "metadata.name!=x", "resourceVersion": "0",
		}, q)
	})

	t.Run("pages followed by the pager", func(t *testing.T) {
		p := pager.New(pager.SimplePageFunc(func(o metav1.ListOptions) (runtime.Object, error) {
			return secretResource().list(ctx, c, "ns1", o)
		}))
		p.PageSize = 2
		obj, paginated, err := p.ListWithAlloc(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.True(t, paginated)
		var got []string
		require.NoError(t, meta.EachListItem(obj, func(o runtime.Object) error {
			s := o.(*secretMeta)
			got = append(got, s.Name+" "+string(s.Type))
			return nil
		}))
		require.Equal(t, []string{"db Opaque", "tls kubernetes.io/tls", "pull kubernetes.io/dockerconfigjson"}, got)
		reqs := srv.requests()
		require.Equal(t, "page2", reqs[len(reqs)-1]["continue"])
	})

	t.Run("server errors keep their status", func(t *testing.T) {
		_, err := secretResource().list(ctx, c, "ns1", metav1.ListOptions{Continue: "stale"})
		require.True(t, apierrors.IsResourceExpired(err), "got %v", err)
	})
}

func TestSecretTableListErrors(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{name: "no type column",
			body: secretTable(`{}`, `[{"name":"Name","type":"string"}]`, `{"cells":["a"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"a"}}}`),
			want: `table has no "Type" column`},
		{name: "type cell not a string",
			body: secretTable(`{}`, `[{"name":"Type","type":"string"}]`, `{"cells":[3],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"a"}}}`),
			want: `"Type" cell is float64`},
		{name: "row without object",
			body: secretTable(`{}`, secretColumns, `{"cells":["a","Opaque",1,"1s"]}`),
			want: "includeObject=Metadata was ignored"},
		{name: "row with a whole secret",
			body: secretTable(`{}`, secretColumns, `{"cells":["a","Opaque",1,"1s"],"object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"dg=="}}}`),
			want: `table row object is a "Secret", want PartialObjectMetadata`},
		{name: "not a table", body: `[]`, want: "decoding secrets table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newTableServer(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, c.body) })
			_, err := secretResource().list(t.Context(), srv.clients(t), "", metav1.ListOptions{})
			require.ErrorContains(t, err, c.want)
			require.Equal(t, "/api/v1/secrets", srv.requests()[0]["path"])
		})
	}

	t.Run("empty list without columns", func(t *testing.T) {
		srv := newTableServer(t, func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"5"},"columnDefinitions":null,"rows":[]}`)
		})
		obj, err := secretResource().list(t.Context(), srv.clients(t), "", metav1.ListOptions{})
		require.NoError(t, err)
		require.Equal(t, &secretMetaList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []secretMeta{}}, obj)
	})
}

func TestSecretTableWatch(t *testing.T) {
	events := []string{
		`{"type":"ADDED","object":` + secretTable(`{"resourceVersion":"210"}`, secretColumns, secretRow("db", "Opaque", "210", "")) + `}`,
		`{"type":"MODIFIED","object":` + secretTable(`{"resourceVersion":"213"}`, "null", secretRow("db", "Opaque", "213", `,"labels":{"c":"d"}`)) + `}`,
		`{"type":"DELETED","object":` + secretTable(`{"resourceVersion":"215"}`, "null", secretRow("db", "Opaque", "215", "")) + `}`,
		`{"type":"BOOKMARK","object":` + secretTable(`{"resourceVersion":"220"}`, "null",
			`{"cells":["","",0,"\u003cunknown\u003e"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"220"}}}`) + `}`,
		`{"type":"BOOKMARK","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"221"},"columnDefinitions":null,"rows":[]}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (209)","reason":"Expired","code":410}}`,
	}
	srv := newTableServer(t, func(w http.ResponseWriter, _ *http.Request) {
		for _, e := range events {
			fmt.Fprintln(w, e)
			w.(http.Flusher).Flush()
		}
	})
	w, err := secretResource().watch(t.Context(), srv.clients(t), "ns1",
		metav1.ListOptions{ResourceVersion: "209", AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](300)})
	require.NoError(t, err)
	defer w.Stop()

	var got []string
	for e := range w.ResultChan() {
		switch o := e.Object.(type) {
		case *secretMeta:
			require.Nil(t, o.ManagedFields, "managed fields name the data keys")
			got = append(got, fmt.Sprintf("%s %s/%s rv=%s type=%s labels=%v", e.Type, o.Namespace, o.Name, o.ResourceVersion, o.Type, o.Labels))
		case *metav1.Status:
			require.True(t, apierrors.IsResourceExpired(apierrors.FromObject(o)))
			got = append(got, fmt.Sprintf("%s %d %s", e.Type, o.Code, o.Reason))
		default:
			t.Fatalf("unexpected %s event object %T", e.Type, e.Object)
		}
	}
	require.Equal(t, []string{
		"ADDED ns1/db rv=210 type=Opaque labels=map[]",
		"MODIFIED ns1/db rv=213 type=Opaque labels=map[c:d]",
		"DELETED ns1/db rv=215 type=Opaque labels=map[]",
		"BOOKMARK / rv=220 type= labels=map[]",
		"BOOKMARK / rv=221 type= labels=map[]",
		"ERROR 410 Expired",
	}, got)
	require.Equal(t, map[string]string{
		"path": "/api/v1/namespaces/ns1/secrets", "accept": tableAccept, "includeObject": "Metadata",
		"watch": "true", "resourceVersion": "209", "allowWatchBookmarks": "true", "timeoutSeconds": "300",
	}, srv.requests()[0])
}

func TestSecretTableWatchDecodeErrors(t *testing.T) {
	cases := []struct {
		name, event, want string
	}{
		{name: "first event without columns",
			event: `{"type":"ADDED","object":` + secretTable(`{}`, "null", secretRow("db", "Opaque", "1", "")) + `}`,
			want:  `table has no \"Type\" column`},
		{name: "two rows",
			event: `{"type":"ADDED","object":` + secretTable(`{}`, secretColumns, secretRow("a", "Opaque", "1", ""), secretRow("b", "Opaque", "1", "")) + `}`,
			want:  "table has 2 rows, want 1"},
		{name: "unknown event type", event: `{"type":"RENAMED","object":{}}`, want: `unknown watch event type \"RENAMED\"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newTableServer(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, c.event) })
			w, err := secretResource().watch(t.Context(), srv.clients(t), "", metav1.ListOptions{})
			require.NoError(t, err)
			defer w.Stop()
			e := <-w.ResultChan()
			require.Equal(t, watch.Error, e.Type)
			st, ok := e.Object.(*metav1.Status)
			require.True(t, ok, "%T", e.Object)
			require.Contains(t, st.Message, c.want)
			require.Equal(t, int32(http.StatusInternalServerError), st.Code, "the reflector backs off and rewatches")
			_, open := <-w.ResultChan()
			require.False(t, open)
		})
	}
}

// The reflector must list, then watch: watch-list requests are refused
// before any request is sent, and the lister-watcher carries client-go's
// marker.
func TestSecretTableNoWatchList(t *testing.T) {
	require.True(t, watchlist.DoesClientNotSupportWatchListSemantics(secretTables{}))
	srv := newTableServer(t, func(http.ResponseWriter, *http.Request) {})
	_, err := secretResource().watch(context.Background(), srv.clients(t), "", metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	require.ErrorIs(t, err, errWatchListUnsupported)
	require.Empty(t, srv.requests())
}

// kubectl.kubernetes.io/last-applied-configuration holds a Secret's data in
// clear when it was created with kubectl apply: it is dropped when a row is
// decoded, by list and by watch, and kube_secret_annotations never exports
// it, whatever the allowlist says (an intentional difference from
// kube-state-metrics, e2e/compat_test.go).
func TestSecretLastAppliedConfigurationDropped(t *testing.T) {
	const secretValue = "applied-secret-value-7c3e"
	applied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"stringData":{"password":"` + secretValue + `"}}`
	annotations := fmt.Sprintf(`,"annotations":{"owner":"sre",%q:%q}`, v1.LastAppliedConfigAnnotation, applied)
	srv := newTableServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			fmt.Fprintln(w, `{"type":"MODIFIED","object":`+secretTable(`{"resourceVersion":"213"}`, secretColumns, secretRow("db", "Opaque", "213", annotations))+`}`)
			return
		}
		fmt.Fprint(w, secretTable(`{"resourceVersion":"211"}`, secretColumns, secretRow("db", "Opaque", "211", annotations)))
	})
	c := srv.clients(t)
	obj, err := secretResource().list(t.Context(), c, "ns1", metav1.ListOptions{})
	require.NoError(t, err)
	listed := obj.(*secretMetaList).Items
	require.Len(t, listed, 1)
	require.Equal(t, map[string]string{"owner": "sre"}, listed[0].Annotations)

	w, err := secretResource().watch(t.Context(), c, "ns1", metav1.ListOptions{ResourceVersion: "211"})
	require.NoError(t, err)
	defer w.Stop()
	e := <-w.ResultChan()
	watched, ok := e.Object.(*secretMeta)
	require.True(t, ok, "%T", e.Object)
	require.Equal(t, map[string]string{"owner": "sre"}, watched.Annotations)

	// A secretMeta that still holds it (built some other way) renders
	// without it under every allowlist that would admit it.
	held := &secretMeta{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "db", UID: "uid-db",
		Annotations: map[string]string{"owner": "sre", v1.LastAppliedConfigAnnotation: applied}}}
	for _, allow := range [][]string{{"*"}, {v1.LastAppliedConfigAnnotation, "owner"}, {"kubectl.kubernetes.io/*"}} {
		got := renderText(t, secretResource(), FamilyOptions{AnnotationsAllowlist: allow}, held, "kube_secret_annotations")
		require.NotContains(t, got, secretValue, "allowlist %v", allow)
		require.NotContains(t, got, "last_applied", "allowlist %v", allow)
	}
	requireGolden(t, `kube_secret_annotations{annotation_owner="sre",namespace="ns1",secret="db"} 1`,
		renderText(t, secretResource(), FamilyOptions{AnnotationsAllowlist: []string{"*"}}, held, "kube_secret_annotations"))
	require.Len(t, held.Annotations, 2, "the object itself is left alone")
}
