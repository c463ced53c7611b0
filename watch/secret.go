package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// secretResource describes secrets: kube-state-metrics'
// internal/store/secret.go.
//
// Secret data never enters the agent. Six of the seven families read only
// metadata, but kube_secret_type reads .type, which a metadata-only watch
// does not return, and a typed watch would bring every secret's values into
// memory. So secrets are listed and watched as server-side tables, the
// representation `kubectl get secrets` asks for: each row carries the
// secret's metadata as its object (includeObject=Metadata) and the type in
// the table's "Type" column. No other cell holds a value (the "Data" cell
// is the number of keys). The agent keeps each row as a [secretMeta],
// without managed fields, which name the data keys. The series are the same
// as kube-state-metrics' own, which watches whole secrets.
func secretResource() *Resource {
	r := newResource("secrets", true, &secretMeta{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return newSecretTables(c, ns).ListWithContext(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return newSecretTables(c, ns).WatchWithContext(ctx, o)
		},
		func(s *secretMeta, e *Emitter) {
			e.Identity("namespace", s.Namespace, "secret", s.Name)
		},
		secretFamilies,
	)
	// secretMeta is not in client-go's scheme: the table rows come from
	// core/v1 secrets.
	r.gr = v1.SchemeGroupVersion.WithResource("secrets").GroupResource()
	return r
}

// secretFamilies lists the secret families, in kube-state-metrics' order.
func secretFamilies(o FamilyOptions) []Family[*secretMeta] {
	type S = *secretMeta
	return []Family[S]{
		{
			Name: "kube_secret_info", Help: "Information about secret.",
			Type: Gauge, Stability: Stable,
			Generate: func(_ S, e *Emitter) { e.Emit(1) },
		},
		{
			Name: "kube_secret_type", Help: "Type about secret.",
			Type: Gauge, Stability: Stable,
			Generate: func(s S, e *Emitter) { e.Emit(1, "type", string(s.Type)) },
		},
		{
			Name: "kube_secret_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", secretAnnotations, o.AnnotationsAllowlist),
		},
		{
			Name: "kube_secret_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[S], o.LabelsAllowlist),
		},
		{
			Name: "kube_secret_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[S],
		},
		{
			Name: "kube_secret_metadata_resource_version", Help: "Resource version representing a specific version of secret.",
			Type: Gauge, Stability: Alpha, Generate: emitResourceVersion[S],
		},
		{
			Name: "kube_secret_owner", Help: "Information about the Secret's owner.",
			Type: Gauge, Stability: Alpha, Generate: emitOwners[S],
		},
	}
}

// secretAnnotations returns a secret's annotations without
// kubectl.kubernetes.io/last-applied-configuration, whatever the allowlist
// says: rowMetadata already drops it, and no secretMeta built another way
// may export it either.
func secretAnnotations(s *secretMeta) map[string]string {
	if _, ok := s.Annotations[v1.LastAppliedConfigAnnotation]; !ok {
		return s.Annotations
	}
	out := make(map[string]string, len(s.Annotations)-1)
	for k, v := range s.Annotations {
		if k != v1.LastAppliedConfigAnnotation {
			out[k] = v
		}
	}
	return out
}

// secretMeta is all the agent learns of a Secret: its metadata (without
// managed fields, which name the data keys, nor the
// kubectl.kubernetes.io/last-applied-configuration annotation, which holds
// the data in clear when the secret was created with kubectl apply) and
// its type.
type secretMeta struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Type is the secret's type, from the table's "Type" column.
	Type v1.SecretType `json:"type,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (s *secretMeta) DeepCopyObject() runtime.Object {
	if s == nil {
		return nil
	}
	out := new(secretMeta)
	s.deepCopyInto(out)
	return out
}

func (s *secretMeta) deepCopyInto(out *secretMeta) {
	out.TypeMeta = s.TypeMeta
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Type = s.Type
}

// secretMetaList is one page of secrets, as the reflector's pager expects a
// list: items plus the continue token and resource version.
type secretMetaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the page's secrets.
	Items []secretMeta `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *secretMetaList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &secretMetaList{TypeMeta: l.TypeMeta, Items: make([]secretMeta, len(l.Items))}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		l.Items[i].deepCopyInto(&out.Items[i])
	}
	return out
}

// Table requests: the media type `kubectl get` sends, and the name of the
// column holding the secret type.
const (
	tableAccept     = "application/json;as=Table;v=v1;g=meta.k8s.io"
	secretTypeTitle = "Type"
)

// errWatchListUnsupported refuses a streaming watch-list request
// (sendInitialEvents). The reflector answers any watch error there by
// listing, then watching: see secretTables.IsWatchListSemanticsUnSupported.
var errWatchListUnsupported = errors.New("secrets are watched as tables: watch-list (sendInitialEvents) is not supported")

// secretTables lists and watches the secrets of one namespace ("" for all)
// as tables, converting each row to a secretMeta.
type secretTables struct {
	client rest.Interface
	// namespace is the namespace listed and watched.
	namespace string
}

var _ cache.ListerWatcherWithContext = secretTables{}

func newSecretTables(c Clients, namespace string) secretTables {
	return secretTables{client: c.Kube.CoreV1().RESTClient(), namespace: namespace}
}

// IsWatchListSemanticsUnSupported tells client-go
// (watchlist.DoesClientNotSupportWatchListSemantics) that the reflector
// must list, then watch, rather than stream the initial state with
// sendInitialEvents. (kube-apiserver v1.37 does stream tables that way,
// ending with a bookmark row annotated k8s.io/initial-events-end, which the
// decoder keeps; but the list-then-watch path is the one tested here.)
// The resource's reflector wraps the list and watch functions in a plain
// cache.ListWatch that hides this marker, so WatchWithContext also refuses
// sendInitialEvents: the reflector then falls back to listing, with no
// request sent.
func (secretTables) IsWatchListSemanticsUnSupported() bool { return true }

// ListWithContext lists one page of secrets. Errors from the server are
// returned as they are, so the reflector recognises an expired continue
// token or resource version (410 Gone) and relists.
func (s secretTables) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	res := s.request(o).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	raw, err := res.Raw()
	if err != nil {
		return nil, err
	}
	var t metav1.Table
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("decoding secrets table: %w", err)
	}
	col := columnIndex(t.ColumnDefinitions, secretTypeTitle)
	list := &secretMetaList{ListMeta: t.ListMeta, Items: make([]secretMeta, len(t.Rows))}
	for i := range t.Rows {
		if list.Items[i], err = secretFromRow(&t.Rows[i], col); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// WatchWithContext watches secrets from o.ResourceVersion.
func (s secretTables) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		return nil, errWatchListUnsupported
	}
	o.Watch = true
	body, err := s.request(o).Stream(ctx)
	if err != nil {
		return nil, err
	}
	return watch.NewStreamWatcher(
		&tableEventDecoder{body: body, dec: json.NewDecoder(body), typeCol: -1},
		// What client-go's own watches report a stream they cannot decode as.
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"),
	), nil
}

// request asks for secrets as a table whose rows carry metadata only.
func (s secretTables) request(o metav1.ListOptions) *rest.Request {
	return s.client.Get().
		Namespace(s.namespace).
		Resource("secrets").
		VersionedParams(&o, metav1.ParameterCodec).
		Param("includeObject", string(metav1.IncludeMetadata)).
		SetHeader("Accept", tableAccept)
}

// tableEventDecoder decodes a watch stream of tables: every event but ERROR
// holds a table with one row. The server sends the column definitions with
// the first event only, so the decoder remembers where the type is.
type tableEventDecoder struct {
	// body is the response stream, closed by Close.
	body io.ReadCloser
	// dec reads one event after the other from body.
	dec *json.Decoder
	// typeCol is the index of the "Type" column, -1 until known.
	typeCol int
}

// Decode returns the next event. Read errors are returned as they are, so
// the stream watcher tells io.EOF and closed connections from bad data.
func (d *tableEventDecoder) Decode() (watch.EventType, runtime.Object, error) {
	var ev metav1.WatchEvent
	if err := d.dec.Decode(&ev); err != nil {
		return "", nil, err
	}
	t := watch.EventType(ev.Type)
	switch t {
	case watch.Error:
		// A metav1.Status, passed on for the reflector to act on (e.g. 410
		// Gone: relist).
		st := new(metav1.Status)
		if err := json.Unmarshal(ev.Object.Raw, st); err != nil {
			return "", nil, fmt.Errorf("decoding watch error status: %w", err)
		}
		return t, st, nil
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		s, err := d.secret(t, ev.Object.Raw)
		if err != nil {
			return "", nil, fmt.Errorf("decoding %s event: %w", t, err)
		}
		return t, s, nil
	}
	return "", nil, fmt.Errorf("unknown watch event type %q", ev.Type)
}

// Close ends the stream.
func (d *tableEventDecoder) Close() { _ = d.body.Close() }

// secret converts an event's table to its secret. A bookmark's row has
// nothing but the resource version (and, in watch-list mode, the
// k8s.io/initial-events-end annotation) in its object: its metadata is
// kept, with the table's resource version when there is no row.
func (d *tableEventDecoder) secret(t watch.EventType, raw []byte) (*secretMeta, error) {
	var tbl metav1.Table
	if err := json.Unmarshal(raw, &tbl); err != nil {
		return nil, err
	}
	if len(tbl.ColumnDefinitions) > 0 {
		d.typeCol = columnIndex(tbl.ColumnDefinitions, secretTypeTitle)
	}
	if t == watch.Bookmark {
		var m metav1.ObjectMeta
		if len(tbl.Rows) > 0 {
			var err error
			if m, err = rowMetadata(&tbl.Rows[0]); err != nil {
				return nil, err
			}
		}
		if m.ResourceVersion == "" {
			m.ResourceVersion = tbl.ResourceVersion
		}
		return &secretMeta{ObjectMeta: m}, nil
	}
	if len(tbl.Rows) != 1 {
		return nil, fmt.Errorf("table has %d rows, want 1", len(tbl.Rows))
	}
	s, err := secretFromRow(&tbl.Rows[0], d.typeCol)
	return &s, err
}

// columnIndex returns the index of the named column, or -1.
func columnIndex(cols []metav1.TableColumnDefinition, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// secretFromRow converts a table row: metadata from its object, type from
// cell typeCol.
func secretFromRow(row *metav1.TableRow, typeCol int) (secretMeta, error) {
	m, err := rowMetadata(row)
	if err != nil {
		return secretMeta{}, err
	}
	if typeCol < 0 || typeCol >= len(row.Cells) {
		return secretMeta{}, fmt.Errorf("secret %s/%s: table has no %q column", m.Namespace, m.Name, secretTypeTitle)
	}
	typ, ok := row.Cells[typeCol].(string)
	if !ok {
		return secretMeta{}, fmt.Errorf("secret %s/%s: %q cell is %T, want a string", m.Namespace, m.Name, secretTypeTitle, row.Cells[typeCol])
	}
	return secretMeta{ObjectMeta: m, Type: v1.SecretType(typ)}, nil
}

// rowMetadata decodes a row's object, which must be metadata only.
func rowMetadata(row *metav1.TableRow) (metav1.ObjectMeta, error) {
	if len(row.Object.Raw) == 0 {
		return metav1.ObjectMeta{}, errors.New("table row has no object: includeObject=Metadata was ignored")
	}
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(row.Object.Raw, &m); err != nil {
		return metav1.ObjectMeta{}, fmt.Errorf("decoding table row object: %w", err)
	}
	if m.Kind != "PartialObjectMetadata" {
		return metav1.ObjectMeta{}, fmt.Errorf("table row object is a %q, want PartialObjectMetadata", m.Kind)
	}
	m.ManagedFields = nil
	// kubectl apply stores the whole applied Secret, data or stringData
	// included, in this annotation: dropped here, so that it is never held
	// or rendered. (kube-state-metrics exports it with an annotations
	// allowlist that admits it; this is an intentional difference.)
	delete(m.Annotations, v1.LastAppliedConfigAnnotation)
	return m.ObjectMeta, nil
}
