package e2e

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Helpers every scenario shares: waiting, HTTP, namespaces, pods and nodes
// on the shared control plane, PromQL against the shared Prometheus.

// eventually retries check until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url) //nolint:noctx // test helper on loopback
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func httpStatus(url string, want int) error {
	resp, err := http.Get(url) //nolint:noctx // test helper on loopback
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("%s answered %d, want %d", url, resp.StatusCode, want)
	}
	return nil
}

// queryBy runs q and returns the values keyed by the labels named in by
// (comma-separated, values joined with "/"), for compact assertions. Two
// series with the same key are an error.
func queryBy(ctx context.Context, q, by string) (map[string]float64, error) {
	res, err := env.prom.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range res {
		var parts []string
		for _, l := range strings.Split(by, ",") {
			parts = append(parts, s.Metric[l])
		}
		k := strings.Join(parts, "/")
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("two series with %s=%q in %v", by, k, res)
		}
		out[k] = s.Value
	}
	return out, nil
}

// expectQuery waits until q's result, keyed by the label by, equals want.
func expectQuery(t *testing.T, q, by string, want map[string]float64) {
	t.Helper()
	eventually(t, 30*time.Second, q, func() error {
		got, err := queryBy(context.Background(), q, by)
		if err != nil {
			return err
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			return fmt.Errorf("got %v, want %v", sorted(got), sorted(want))
		}
		return nil
	})
}

func sorted(m map[string]float64) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%g", k, v))
	}
	sort.Strings(out)
	return out
}

func cleanupNodes(t *testing.T, c kubernetes.Interface, nodes []string) {
	t.Helper()
	for _, n := range nodes {
		_ = c.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
	}
}

// createPods creates a namespace (when ns is not "") and a pod of one
// container per name in it, and returns their UIDs by name.
func createPods(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string, names ...string) map[string]string {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err, "creating namespace %s", ns)
	}
	uids := map[string]string{}
	for _, n := range names {
		p, err := c.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: map[string]string{"app": n}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err, "creating pod %s/%s", ns, n)
		uids[n] = string(p.UID)
	}
	return uids
}

// deleteNamespace removes a namespace a test created on the shared control
// plane (no controllers run, so its pods are deleted one by one first).
func deleteNamespace(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	zero := int64(0)
	_ = c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}
func createNamespace(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// needBinary returns a tool's path; when it is not built it skips the
// test, except in CI, where it fails it.
func needBinary(t *testing.T, name string) string {
	t.Helper()
	bin, err := testenv.Binary(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing binary in CI: %v", err)
		}
		t.Skip(err)
	}
	return bin
}

func mapKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// dirSize returns the bytes of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	}))
	return n
}

// extraCopies counts, over series and timestamps, the times a sample was
// seen beyond the first.
func extraCopies(seen map[string]map[int64]int) int {
	n := 0
	for _, byTS := range seen {
		for _, c := range byTS {
			n += c - 1
		}
	}
	return n
}

// withoutStale removes the staleness markers from series and returns it.
func withoutStale(series map[string]float64) map[string]float64 {
	for k, v := range series {
		if encode.IsStaleNaN(v) {
			delete(series, k)
		}
	}
	return series
}

// exportKey is the series key (testenv.FormatSeries) of labels as
// VictoriaMetrics exports them, __name__ among them.
func exportKey(m map[string]string) string {
	ls := make([]testenv.Label, 0, len(m))
	for k, v := range m {
		if k != "__name__" {
			ls = append(ls, testenv.Label{Name: k, Value: v})
		}
	}
	return testenv.FormatSeries(m["__name__"], ls)
}

// startPrometheus starts a Prometheus of the test's own, for counts no
// other test adds to, stopped when the test ends.
func startPrometheus(t *testing.T) *testenv.Prometheus {
	t.Helper()
	needBinary(t, "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := testenv.StartPrometheus(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	return p
}

// startVM starts a VictoriaMetrics of the test's own, stopped when the test
// ends (after the agents it started, which t.Cleanup stops first).
func startVM(t *testing.T) *testenv.VictoriaMetrics {
	t.Helper()
	needBinary(t, "victoria-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vm, err := testenv.StartVictoriaMetrics(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(vm.Stop)
	return vm
}

// requireSameLabelSets waits until q answers with want series at scraper
// (a Prometheus that scrapes the kubelet as kube-prometheus-stack does) and
// with the same label sets at pushed (the agent's receiver, its cluster
// external label left out: the scrape has none), and returns them.
func requireSameLabelSets(t *testing.T, within time.Duration, q string, pushed, scraper *testenv.Prometheus, want int) []string {
	t.Helper()
	labelSets := func(p *testenv.Prometheus, drop ...string) ([]string, error) {
		res, err := p.Query(t.Context(), q)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, s := range res {
			m := maps.Clone(s.Metric)
			for _, d := range drop {
				delete(m, d)
			}
			out = append(out, sortedLabels(m))
		}
		slices.Sort(out)
		return out, nil
	}
	var scraped []string
	eventually(t, within, "the same label sets as a kube-prometheus-stack scrape", func() error {
		got, err := labelSets(pushed, "cluster")
		if err != nil {
			return err
		}
		if scraped, err = labelSets(scraper); err != nil {
			return err
		}
		if len(scraped) != want {
			return fmt.Errorf("scraped %d series, want %d: %v", len(scraped), want, scraped)
		}
		if d := cmp.Diff(scraped, got); d != "" {
			return fmt.Errorf("label sets (-scraped +pushed):\n%s", d)
		}
		return nil
	})
	return scraped
}
