package testenv_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// TestFixturesSecrets checks that a real kube-apiserver accepts the secret
// fixtures, then runs the secrets reflector against it: the initial list
// must hold every secret with its type and no trace of its data, and a
// label change and a deletion must arrive through the table watch. Without
// the binaries it is skipped, except in CI (CI=true).
func TestFixturesSecrets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := testenv.SharedControlPlane(t)
	c, err := cp.Client()
	require.NoError(t, err)
	// The second namespace must stay out of the first one's reflector.
	require.NoError(t, testenv.LoadFixtures(ctx, c, testenv.FixturesSecrets, "secrets-a", "secrets-b"))

	clients, err := watch.NewClients(cp.RESTConfig(), "fixtures-secrets-test", watch.ReadBatching{})
	require.NoError(t, err)
	r, ok := watch.Lookup("secrets")
	require.True(t, ok)
	store := &recordingStore{}
	reflector := r.NewReflector(clients, "secrets-a", "", store)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		reflector.RunWithContext(runCtx)
	}()
	defer func() { stop(); <-done }()

	// The reflector first tries a watch-list, which the secrets watch
	// refuses, so it lists: one Replace with every secret.
	first := store.waitFor(t, func(storeEvent) bool { return true })
	require.Equal(t, "replace", first.op)
	gotTypes := map[string]string{}
	for _, obj := range first.objs {
		name, typ := requireNoData(t, obj)
		gotTypes[name] = typ
	}
	require.Equal(t, map[string]string{
		"secret-opaque":           "Opaque",
		"secret-untyped":          "Opaque",
		"secret-tls":              "kubernetes.io/tls",
		"secret-dockerconfigjson": "kubernetes.io/dockerconfigjson",
		"secret-dockercfg":        "kubernetes.io/dockercfg",
		"secret-basic-auth":       "kubernetes.io/basic-auth",
		"secret-ssh-auth":         "kubernetes.io/ssh-auth",
		"secret-sa-token":         "kubernetes.io/service-account-token",
		"secret-custom":           "example.com/custom",
		"secret-applied":          "Opaque", // its last-applied annotation is dropped (requireNoData)
	}, gotTypes)
	renderer := r.NewRenderer(watch.RenderOptions{})
	for _, obj := range first.objs {
		_, set, err := renderer.Render(obj)
		require.NoError(t, err)
		// info, type, created and resource version, and one owner series
		// per owner (one for none); no allowlists, so no labels.
		owners := max(1, len(obj.(metav1.Object).GetOwnerReferences()))
		require.Equal(t, 4+owners, set.Len())
	}

	secrets := c.CoreV1().Secrets("secrets-a")
	_, err = secrets.Patch(ctx, "secret-opaque", types.MergePatchType, []byte(`{"metadata":{"labels":{"rotated":"yes"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	updated := store.waitFor(t, func(e storeEvent) bool { return e.op == "update" })
	name, typ := requireNoData(t, updated.objs[0])
	require.Equal(t, "secret-opaque Opaque", name+" "+typ)
	require.Equal(t, "yes", updated.objs[0].(metav1.Object).GetLabels()["rotated"])

	require.NoError(t, secrets.Delete(ctx, "secret-basic-auth", metav1.DeleteOptions{}))
	deleted := store.waitFor(t, func(e storeEvent) bool { return e.op == "delete" })
	name, typ = requireNoData(t, deleted.objs[0])
	require.Equal(t, "secret-basic-auth kubernetes.io/basic-auth", name+" "+typ)

	for _, e := range store.all() {
		require.NotEqual(t, "replace", e.op, "no relist after the first list")
		for _, obj := range e.objs {
			require.Equal(t, "secrets-a", obj.(metav1.Object).GetNamespace())
		}
	}
}

// requireNoData checks that obj is a secret seen through the table watch:
// metadata and type only, no data, no managed fields (which name the data
// keys), and no fixture value anywhere. It returns the name and type.
func requireNoData(t *testing.T, obj any) (name, typ string) {
	t.Helper()
	require.Equal(t, "*watch.secretMeta", fmt.Sprintf("%T", obj))
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	for _, v := range []string{testenv.SecretFixtureValue, base64.StdEncoding.EncodeToString([]byte(testenv.SecretFixtureValue))} {
		require.NotContains(t, string(b), v)
	}
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	require.Equal(t, []string{"metadata", "type"}, keys)
	m := obj.(metav1.Object)
	require.Empty(t, m.GetManagedFields())
	require.NoError(t, json.Unmarshal(fields["type"], &typ))
	return m.GetName(), typ
}

// storeEvent is one call the reflector made on the store.
type storeEvent struct {
	// op is add, update, delete or replace.
	op string
	// objs are the objects passed.
	objs []any
}

// recordingStore is a cache.ReflectorStore that records every call.
type recordingStore struct {
	// mu guards events and seen.
	mu     sync.Mutex
	events []storeEvent
	// seen is how many events waitFor has handed out.
	seen int
}

func (s *recordingStore) record(op string, objs ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, storeEvent{op: op, objs: objs})
	return nil
}

func (s *recordingStore) Add(obj any) error    { return s.record("add", obj) }
func (s *recordingStore) Update(obj any) error { return s.record("update", obj) }
func (s *recordingStore) Delete(obj any) error { return s.record("delete", obj) }
func (s *recordingStore) Replace(objs []any, _ string) error {
	return s.record("replace", objs...)
}
func (s *recordingStore) Resync() error { return nil }

// waitFor returns the first event not handed out before that matches,
// waiting up to 30s; events skipped on the way are handed out too.
func (s *recordingStore) waitFor(t *testing.T, match func(storeEvent) bool) storeEvent {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		for s.seen < len(s.events) {
			e := s.events[s.seen]
			s.seen++
			if match(e) {
				s.mu.Unlock()
				return e
			}
		}
		s.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no matching store event in 30s; got %s", s.describe())
	return storeEvent{}
}

// all returns the events recorded after the first one.
func (s *recordingStore) all() []storeEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events[1:])
}

func (s *recordingStore) describe() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, e := range s.events {
		fmt.Fprintf(&b, "%s(%d) ", e.op, len(e.objs))
	}
	return b.String()
}
